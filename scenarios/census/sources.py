"""Opening what the user named for a census, read-only where the storage
supports it.

FileStorage(read_only=True), ZEO ClientStorage(read_only=True), and
`read_only=1` added to file:// and zeo:// URIs.  A read-only FileStorage
takes no lock, so it can be opened while a ZEO server serves the same
Data.fs; it then sees the file as it was when opened, and the census says
so.  For the server's current view, ask the server (--zeo-address).  Other
storages (bdb) are opened through the registry, in a directory `vfab-bench
populate` wrote; the census only ever reads from them.

Before opening, a database at a path or a file://, bdb:// or zconfig://
URI is checked whole without writing (storages.checks, the factory's
check_existing): a damaged one is reported (DamagedStorage, exit status 2),
never censused, and a bdb:// directory that holds no environment is
refused before Berkeley DB would create one there.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import storages
from scenarios.data.datadir import check_path_storage, read_marker
from storages import StorageError


@dataclasses.dataclass
class Source:
    """An open storage to take a census of; close() releases it."""

    storage: Any
    name: str
    directory: Path | None = None
    warning: str | None = None
    close: Callable[[], None] = lambda: None


def server_holds(lock_path: Path) -> bool:
    """True when another process holds the FileStorage lock file (a ZEO
    server, an application).  Never creates the lock file."""
    from storages.file import lock_held

    return lock_held(lock_path)


IN_USE = (
    "{path} is open in another process (a ZEO server?); read-only, the "
    "census sees the file as it was when opened: for the server's own "
    "view use --zeo-address"
)


def open_path(name: str, path: Path) -> Source:
    """The database of storage *name* at *path* (file: a directory holding
    Data.fs, or the .fs file itself)."""
    check_path_storage(name)
    if not path.exists():
        raise StorageError(f"{path} does not exist")
    if name == "file":
        from storages.file import check_filestorage, open_filestorage

        fs_path = path / "Data.fs" if path.is_dir() else path
        if not fs_path.is_file():
            raise StorageError(f"no FileStorage at {path} ({fs_path} is missing)")
        warning = None
        if server_holds(Path(f"{fs_path}.lock")):
            warning = IN_USE.format(path=fs_path)
        check_filestorage(fs_path, in_use=warning is not None)
        storage = open_filestorage(fs_path, read_only=True)
        return Source(
            storage,
            str(fs_path),
            directory=fs_path.parent,
            warning=warning,
            close=storage.close,
        )
    # Any other directory storage, through the registry: only in a directory
    # populate wrote, because opening one elsewhere would create a database.
    marker = read_marker(path) if path.is_dir() else None
    if marker is None or marker.get("storage") != name:
        raise StorageError(
            f"{path} holds no {name} data set written by vfab-bench populate; "
            "give a URI for any other database"
        )
    factory = storages.get(name)
    factory.check_existing(path)
    store = factory.open(path)
    db = getattr(store, "db", None)
    if db is None:
        store.close()
        raise StorageError(f"storage {name!r} has no ZODB database to census")
    return Source(db.storage, str(path), directory=path, close=store.close)


def open_zeo(address: tuple[str, int]) -> Source:
    """A read-only ZEO client of the server at *address*."""
    import ZEO.ClientStorage
    from ZEO.Exceptions import ClientDisconnected

    from storages.zeo import check_reachable

    check_reachable(address)
    try:
        storage = ZEO.ClientStorage.ClientStorage(
            address, read_only=True, wait_timeout=10
        )
    except ClientDisconnected:
        raise StorageError(
            f"ZEO server at {address[0]}:{address[1]} did not answer as a ZEO server"
        ) from None
    return Source(storage, f"{address[0]}:{address[1]}", close=storage.close)


def read_only_uri(uri: str) -> str:
    """*uri* with read_only=1 added where its scheme supports it and it
    does not say otherwise."""
    scheme = uri.partition("://")[0]
    if scheme not in ("file", "zeo") or "read_only=" in uri:
        return uri
    extra = "read_only=1" + ("&wait_timeout=10" if scheme == "zeo" else "")
    return f"{uri}{'&' if '?' in uri else '?'}{extra}"


def uri_schemes() -> list[str]:
    from importlib.metadata import entry_points

    return sorted({ep.name for ep in entry_points(group="zodburi.resolvers")})


def open_uri(uri: str) -> Source:
    """The storage a zodburi URI names (file://, zeo://, bdb:// once the bdb
    storage is installed, ...), read-only where the scheme allows."""
    import zodburi

    scheme, sep, rest = uri.partition("://")
    if not sep:
        raise StorageError(f"not a URI: {uri!r} (e.g. file:///abs/Data.fs)")
    if scheme not in uri_schemes():
        raise StorageError(
            f"no resolver for {scheme}:// URIs; choose from "
            + ", ".join(f"{s}://" for s in uri_schemes())
        )
    directory = None
    warning = None
    if scheme == "zeo":
        from urllib.parse import urlsplit

        from storages.zeo import check_reachable

        where = urlsplit(uri.replace("zeo://", "http://", 1))
        if where.hostname:  # TCP; a Unix socket path is left to ZEO
            try:
                port = where.port or 9991  # zodburi's default
            except ValueError:
                raise StorageError(f"bad port in {uri!r}") from None
            check_reachable((where.hostname, port))
    if scheme == "file":
        fs_path = Path(rest.partition("?")[0])
        if not fs_path.is_file():
            raise StorageError(f"no FileStorage at {fs_path}")
        directory = fs_path.parent
        if server_holds(Path(f"{fs_path}.lock")):
            warning = IN_USE.format(path=fs_path)
    # file://, bdb://, zconfig://: what they name, checked whole first.
    from storages.checks import check_uri

    check_uri(uri, must_exist=True, read_only=True)
    try:
        factory, _ = zodburi.resolve_uri(read_only_uri(uri))
        storage = factory()
    except (StorageError, *storages.user_errors()):
        raise  # one line for the user already
    except Exception as e:
        raise StorageError(
            f"cannot open {uri}: {type(e).__name__}: {e}".splitlines()[0]
        ) from None
    return Source(storage, uri, directory, warning, storage.close)


def open_config(path: Path, database: str | None = None) -> Source:
    """The storage of a <zodb> section of a ZConfig file (*database* names
    it where there are several), read-only wherever its storage sections
    have a read-only mode (filestorage, zeoclient, relstorage)."""
    from storages.configured import zconfig_source

    source = zconfig_source(path, database)
    storage = source.open_read_only()
    directory = None
    warning = None
    fs_path = source.existing_path()
    if fs_path is not None:
        directory = fs_path.parent
        if server_holds(Path(f"{fs_path}.lock")):
            warning = IN_USE.format(path=fs_path)
    return Source(storage, source.describe(), directory, warning, storage.close)
