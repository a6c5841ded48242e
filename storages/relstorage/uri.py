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

import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlsplit

from storages.base import StorageError
from storages.errors import NoDatabase, one_line

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


def sqlite_history(data_dir: Path) -> bool | None:
    """keep_history of the RelStorage database in *data_dir*, read from its
    main.sqlite3 without writing (opened immutable): a history-preserving
    object_state has prev_tid; None when there is no RelStorage database
    there (no file, or no object_state table)."""
    path = Path(data_dir) / "main.sqlite3"
    if not path.is_file():
        return None
    try:
        connection = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
    except sqlite3.Error as e:
        raise StorageError(f"cannot read {path}: {e}") from None
    try:
        columns = [
            row[1] for row in connection.execute("PRAGMA table_info(object_state)")
        ]
    except sqlite3.DatabaseError as e:
        raise StorageError(
            f"cannot read {path}: {one_line(e, with_type=False)}"
        ) from None
    finally:
        connection.close()
    return ("prev_tid" in columns) if columns else None


def check_sqlite_history(
    data_dir: Path, keep_history: bool | None, read_only: bool
) -> bool:
    """The keep_history to open the RelStorage database in *data_dir* with:
    the database's own when *keep_history* is None.  StorageError, nothing
    opened, when the URI's keep_history is not the database's (RelStorage
    would add the other mode's tables to it, then fail) or, *read_only*,
    when there is no database to read (RelStorage would create one)."""
    found = sqlite_history(data_dir)
    if found is None:
        if read_only:
            raise NoDatabase(
                f"no RelStorage database in {data_dir}: nothing to open "
                "read-only (opening it would create one)"
            )
        return True if keep_history is None else keep_history
    if keep_history is not None and keep_history != found:
        mode = "preserving" if found else "free"
        raise StorageError(
            f"{data_dir} holds a history-{mode} RelStorage database: give "
            f"keep_history={'true' if found else 'false'} (one database per "
            "history mode; opened in the other, RelStorage adds that mode's "
            "tables to it); nothing was opened"
        )
    return found


def open_uri(spec: str, read_only: bool = False) -> Any:
    """An open RelStorage for a postgres://, mysql:// or sqlite:// URI
    (StorageError for what a user can fix); *read_only*: RelStorage's
    read-only mode."""
    from storages.relstorage.adapters import open_relstorage

    scheme = spec.partition("://")[0]
    backend = RELSTORAGE_SCHEMES[scheme]
    url = urlsplit(spec.replace(f"{scheme}://", "http://", 1))
    query = dict(parse_qsl(url.query))
    said = query.pop("keep_history", None)
    keep_history = said is None or said.lower() in _TRUE
    driver = query.pop("driver", None)
    where: dict[str, Any] = {}
    name = unquote(url.path.lstrip("/"))
    if backend == "sqlite3":
        if "data_dir" not in query:
            raise StorageError(f"{scheme}:// target needs ?data_dir=DIR: {spec}")
        where["data_dir"] = Path(query.pop("data_dir"))
        keep_history = check_sqlite_history(
            where["data_dir"],
            None if said is None else keep_history,
            read_only,
        )
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
