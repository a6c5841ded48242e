"""What `vfab-bench verify --target` checks before it writes anything: that
the target holds a vfab data set, looked for read-only (a FileStorage, a
Berkeley DB environment, a ZConfig file's storage opened read-only; a
server through a client that writes nothing, waiting for it a bounded
time), and that no output lands in the target's own directory.

The scenarios write into the target and the load commits into it: a
database that is not a vfab data set, or a server that does not answer,
is refused here, one line and exit 2, before either starts.  (A server
that accepted the connection but does not answer is given ZEO's 10 s.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scenarios.errors import ConfigError
from scenarios.load.target import check_target, describe, is_zconfig
from storages import ROOT_KEY, StorageError
from storages.named import URISource


def _open_read_only(spec: str) -> tuple[Any, Any]:
    """(the storage *spec* names, what closes it): read-only where its
    kind can be, on a private copy where it cannot (a Berkeley DB
    environment: opening it writes its region files), through a client
    of a server otherwise (census's way: scenarios.census.sources)."""
    from scenarios.census import sources

    if is_zconfig(spec):
        from storages.checks import parse_storage_config

        config = parse_storage_config(spec)
        sections = [*config.databases, *config.storages]
        if not sections:
            raise StorageError("the target's ZConfig text names no storage")
        section = sections[0]
        storage = getattr(section.config, "storage", section)
        return sources.open_sections(storage, _Described(describe(spec)))
    opened = sources.open_uri(spec)
    return opened.storage, opened.close


class _Described:
    """What storages.named.open_one_line says a failed open was of."""

    def __init__(self, text: str) -> None:
        self.text = text

    def describe(self) -> str:
        return self.text


def check_data_set(spec: str) -> None:
    """StorageError (one line) unless the target *spec* holds a vfab data
    set: checked whole without writing first (scenarios.load.target),
    then opened read-only and its root looked at."""
    from scenarios.data import FAB_KEY

    check_target(spec)
    storage, close = _open_read_only(spec)
    try:
        import ZODB
        import ZODB.POSException

        try:
            db = ZODB.DB(storage)
        except ZODB.POSException.ReadOnlyError:
            raise StorageError(_no_data_set(spec)) from None
        try:
            connection = db.open()
            try:
                container = connection.root().get(ROOT_KEY)
                found = container is not None and FAB_KEY in container
            finally:
                connection.close()
        finally:
            db.close()
    finally:
        close()
    if not found:
        raise StorageError(_no_data_set(spec))


def _no_data_set(spec: str) -> str:
    return (
        f"no vfab data set at {describe(spec)}; start one with: vfab-bench "
        "serve --storage file --size small"
    )


def local_directories(spec: str) -> list[Path]:
    """The directories on this machine that hold the target's data (a
    Data.fs's, a BDB environment, RelStorage's SQLite files), if any."""
    paths: list[Path] = []
    if is_zconfig(spec):
        from storages.checks import parse_storage_config
        from storages.named import storage_sections

        try:
            config = parse_storage_config(spec)
        except StorageError:
            return []
        for section in [*config.databases, *config.storages]:
            storage = getattr(section.config, "storage", section)
            for inner in storage_sections(storage):
                path = getattr(inner.config, "path", None)
                if isinstance(path, str):
                    paths.append(Path(path))
    else:
        try:
            path = URISource(spec).existing_path()
        except StorageError:
            path = None
        if path is not None:
            paths.append(path)
    out = []
    for p in paths:
        try:  # a symlink loop is the read-only check's to report
            out.append(p.resolve() if p.is_dir() else p.resolve().parent)
        except (OSError, RuntimeError):
            continue
    return out


def refuse_outputs_inside(spec: str, outputs: dict[str, Path | None]) -> None:
    """ConfigError for an output (flag -> path) inside the target's own
    directory: it would be written among the database's files."""
    directories = local_directories(spec)
    for flag, path in outputs.items():
        if path is None:
            continue
        try:
            where = Path(path).absolute().resolve().parent
        except (OSError, RuntimeError):
            continue  # the output check reports it
        for directory in directories:
            if where == directory or directory in where.parents:
                raise ConfigError(
                    f"{flag} {path} is inside the target's own directory "
                    f"{directory}: write it elsewhere"
                )
