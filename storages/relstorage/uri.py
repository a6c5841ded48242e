"""RelStorage databases named by zodburi URIs: what share() yields and
--target takes.

RelStorage's own schemes and query keys (postgres://, mysql://, sqlite://;
keep_history, driver; data_dir for sqlite), but opened through
open_relstorage rather than RelStorage's zodburi resolver: a driver is
always named (RelStorage's "auto" picks its gevent drivers once locust is
installed) and MariaDB gets the suite's workarounds.  keep_history defaults
to true, as in RelStorage's resolver.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlsplit

from storages.base import StorageError

#: zodburi scheme -> open_relstorage backend.
RELSTORAGE_SCHEMES = {"postgres": "postgresql", "mysql": "mysql", "sqlite": "sqlite3"}
_TRUE = ("1", "true", "yes", "on")


def relstorage_uri(
    backend: str,
    keep_history: bool,
    driver: str | None,
    *,
    host: str | None = None,
    port: int | None = None,
    user: str | None = None,
    password: str | None = None,
    database: str | None = None,
    data_dir: Path | None = None,
) -> str:
    """The target URI of a RelStorage database (what share() yields)."""
    scheme = {v: k for k, v in RELSTORAGE_SCHEMES.items()}[backend]
    query = [f"keep_history={'true' if keep_history else 'false'}"]
    if driver:
        query.append(f"driver={driver}")
    if data_dir is not None:
        query.insert(0, f"data_dir={quote(str(data_dir))}")
        return f"{scheme}://?{'&'.join(query)}"
    auth = quote(user or "", safe="")
    if password:
        auth += ":" + quote(password, safe="")
    where = f"{auth}@" if auth else ""
    where += (f"[{host}]" if ":" in host else host) if host else ""
    where += f":{port}" if port else ""
    return f"{scheme}://{where}/{quote(database or '')}?{'&'.join(query)}"


def open_uri(spec: str, read_only: bool = False) -> Any:
    """An open RelStorage for a postgres://, mysql:// or sqlite:// URI
    (StorageError for what a user can fix); *read_only*: RelStorage's
    read-only mode."""
    from storages.relstorage.adapters import open_relstorage

    scheme = spec.partition("://")[0]
    backend = RELSTORAGE_SCHEMES[scheme]
    url = urlsplit(spec.replace(f"{scheme}://", "http://", 1))
    query = dict(parse_qsl(url.query))
    keep_history = query.pop("keep_history", "true").lower() in _TRUE
    driver = query.pop("driver", None)
    where: dict[str, Any] = {}
    name = unquote(url.path.lstrip("/"))
    if backend == "sqlite3":
        if "data_dir" not in query:
            raise StorageError(f"{scheme}:// target needs ?data_dir=DIR: {spec}")
        where["data_dir"] = Path(query.pop("data_dir"))
    elif backend == "postgresql":
        parts = {
            "host": url.hostname,
            "port": str(url.port) if url.port else None,
            "user": unquote(url.username) if url.username else None,
            "password": unquote(url.password) if url.password else None,
            "dbname": name or None,
        }
        where["dsn"] = " ".join(f"{k}={v}" for k, v in parts.items() if v)
    else:
        params: dict[str, Any] = {"host": url.hostname or "127.0.0.1"}
        params["port"] = url.port or 3306
        params["user"] = unquote(url.username) if url.username else "root"
        params["passwd"] = unquote(url.password) if url.password else ""
        if name:
            params["database"] = name
        where["params"] = params
    if query:
        raise StorageError(
            f"{scheme}:// target: unsupported keys {', '.join(sorted(query))} "
            "(keep_history, driver"
            + (", data_dir" if backend == "sqlite3" else "")
            + ")"
        )
    if read_only:
        where.update(read_only=True)
    return open_relstorage(backend, keep_history=keep_history, driver=driver, **where)
