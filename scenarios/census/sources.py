"""Opening what the user named for a census, read-only where the storage
allows, after checking it whole without writing: a damaged database is
reported (exit 2), never censused (docs/internals.md).
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import storages
from scenarios.data.datadir import check_path_storage, read_marker
from scenarios.interrupts import remove_tree
from storages import StorageError
from storages.named import URISource, uri_schemes, zconfig_source


@dataclasses.dataclass
class Source:
    """An open storage to take a census of; close() releases it."""

    storage: Any
    name: str
    directory: Path | None = None
    warning: str | None = None
    close: Callable[[], None] = lambda: None


IN_USE = (
    "{path} is open in another process (a ZEO server?); read-only, the "
    "census sees the file as it was when opened: for the server's own "
    "view use --zeo-address"
)


def open_path(name: str, path: Path) -> Source:
    """The database of storage *name* at *path* (a directory, or the file a
    storage keeps its data in, e.g. file's Data.fs): through the URI its
    factory gives for it (path_uri(): read-only), else through the registry
    in a directory populate wrote."""
    check_path_storage(name)
    if not path.exists():
        raise StorageError(f"{path} does not exist")
    uri = storages.factory_class(name).path_uri(path)
    if uri is not None:
        source = open_uri(uri)
        return dataclasses.replace(source, name=source.name.partition("://")[2])
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
    cleanup: Callable[[], None] = lambda: None  # noqa: E731
    where = path
    if not any(scheme.read_only for scheme in factory.uri_schemes):
        where, cleanup = private_copy(path)
    try:
        store = factory.open(where)
    except BaseException:
        cleanup()
        raise
    db = getattr(store, "db", None)
    if db is None:
        store.close()
        cleanup()
        raise StorageError(f"storage {name!r} has no ZODB database to census")
    return Source(db.storage, str(path), path, None, _closing(store.close, cleanup))


def open_zeo(address: tuple[str, int]) -> Source:
    """A read-only client of the ZEO server at *address* (--zeo-address)."""
    from storages.ports import host_port
    from storages.zeo import address_uri

    source = URISource(address_uri(address))
    storage = source.open(read_only=True)
    return Source(storage, host_port(*address), close=storage.close)


def open_uri(uri: str) -> Source:
    """The storage a zodburi URI names (file://, zeo://, bdb://,
    postgres://...), read-only where its scheme allows (storages.named):
    what it names here checked whole first; a server is reached by its
    storage's own opener (ZEO's client checks first)."""
    source = URISource(uri)
    scheme = uri.partition("://")[0]
    if scheme == "zconfig":
        return open_zconfig_uri(uri)
    if "://" not in uri:
        raise StorageError(f"not a URI: {uri!r} (e.g. file:///abs/Data.fs)")
    scheme = source.scheme  # zlib+file:// is file:// through zc.zlibstorage
    if scheme not in uri_schemes():
        raise StorageError(
            f"no resolver for {scheme}:// URIs; choose from "
            + ", ".join(f"{s}://" for s in uri_schemes())
        )
    source.check_files(must_exist=True, read_only=True)
    path = source.existing_path()
    warning = IN_USE.format(path=path) if source.held_elsewhere() else None
    directory = None if path is None else (path if path.is_dir() else path.parent)
    declared, _ = source.entry()
    if path is None or declared.read_only:
        storage = source.open(read_only=True)
        return Source(storage, uri, directory, warning, storage.close)
    # No read-only mode (bdb://): its copy is opened, the original untouched.
    copy, cleanup = private_copy(path)
    rest = source.base_uri.partition("://")[2]
    query = rest.partition("?")[2]
    prefix = "zlib+" if source.zlib else ""
    copied = f"{prefix}{source.scheme}://{copy}" + (f"?{query}" if query else "")
    try:
        storage = URISource(copied).open(read_only=True)
    except BaseException:
        cleanup()
        raise
    return Source(storage, uri, directory, warning, _closing(storage.close, cleanup))


def open_config(path: Path, database: str | None = None) -> Source:
    """The storage of a <zodb> section of a ZConfig file (*database* names
    it where there are several), read-only wherever its storage sections
    have a read-only mode (filestorage, zeoclient, relstorage)."""
    source = zconfig_source(path, database)
    source.check_files(must_exist=True, read_only=True)
    source.reach()
    storage, close = open_sections(source.section().config.storage, source)
    directory = None
    warning = None
    local = source.existing_path()
    if local is not None:
        directory = local if local.is_dir() else local.parent
        if source.held_elsewhere():
            warning = IN_USE.format(path=local)
    return Source(storage, source.describe(), directory, warning, close)


def open_zconfig_uri(uri: str) -> Source:
    """The storage a zconfig:// URI names (a storage or <zodb> section of
    the file, the one named after '#' or the first), read-only wherever its
    sections have a read-only mode: zodburi itself would open it for
    writing.  What it names here is checked whole first."""
    from storages.checks import parse_storage_config
    from storages.named import storage_sections

    source = URISource(uri)
    parts = urlsplit(uri)
    path = Path(unquote(parts.path))
    name = parts.fragment or None
    source.check_files(must_exist=True, read_only=True)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise StorageError(f"cannot read {path}: {e.strerror}") from None
    config = parse_storage_config(text)
    candidates = [*config.databases, *config.storages]
    chosen = [s for s in candidates if name is None or s.name == name]
    if not chosen:
        raise StorageError(
            f"no section {name!r} in {path}" if name else f"{path} holds no storage"
        )
    section = chosen[0]
    storage = getattr(section.config, "storage", None) or section
    directory = None
    for inner in storage_sections(storage):
        local = getattr(inner.config, "path", None)
        if directory is None and isinstance(local, str):
            directory = Path(local).parent
    opened, close = open_sections(storage, source)
    return Source(opened, uri, directory, None, close)


def private_copy(path: Path) -> tuple[Path, Callable[[], None]]:
    """A copy of the file or directory *path* in a new temporary directory,
    and what removes it: a storage with no read-only mode (Berkeley DB
    writes its region files and a checkpoint whenever it opens) is
    censused on its copy, the original left byte for byte."""
    scratch = Path(tempfile.mkdtemp(prefix="vfab-census-"))
    copy = scratch / path.name
    try:
        if path.is_dir():
            shutil.copytree(path, copy, symlinks=True)
        else:
            shutil.copy2(path, copy)
    except OSError as e:
        remove_tree(scratch)
        raise StorageError(
            f"cannot copy {path} to read it untouched: {e.strerror}"
        ) from None
    return copy, lambda: remove_tree(scratch)


def _closing(
    close: Callable[[], None], cleanup: Callable[[], None]
) -> Callable[[], None]:
    def both() -> None:
        try:
            close()
        finally:
            cleanup()

    return both


def open_sections(storage: Any, source: Any) -> tuple[Any, Callable[[], None]]:
    """Open the storage section *storage* (a ZConfig datatype, parsed for
    this open only) for a census: read-only wherever a section has a
    read-only mode, on a private copy where a section of a storage on this
    machine has none (<bdbstorage>).  (the storage, what closes it and
    removes the copies)"""
    from storages import registry
    from storages.named import open_one_line, section_type, storage_sections

    cleanups: list[Callable[[], None]] = []
    local = registry.section_factories()

    def cleanup() -> None:
        for one in cleanups:
            one()

    try:
        for inner in storage_sections(storage):
            if hasattr(inner.config, "read_only"):
                inner.config.read_only = True
                continue
            path = getattr(inner.config, "path", None)
            if section_type(inner) in local and isinstance(path, str):
                if Path(path).exists():
                    copy, remove = private_copy(Path(path))
                    cleanups.append(remove)
                    inner.config.path = str(copy)
        opened = open_one_line(storage.open, source)
    except BaseException:
        cleanup()
        raise
    return opened, _closing(opened.close, cleanup)
