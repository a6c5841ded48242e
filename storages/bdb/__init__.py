"""bdb and zeo+bdb: ZODB on Berkeley DB, locally or behind a real runzeo.

``storages.bdb.BDBStorage(path, **options)`` is the storage itself
(storage.py; options in options.py).  This package is also a ZConfig
component (component.xml, ``%import storages.bdb`` then a ``<bdbstorage>``
section) and provides the zodburi scheme ``bdb://`` (config.py).

Importing the package needs no berkeleydb: the factories import it in
open(), and ``BDBStorage`` is loaded on first use.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from storages.base import StorageError, StorageFactory, StorageOptions, Store, ZODBStore
from storages.bdb.options import DURABILITY, BDBOptions
from storages.zeo import ZEOFactory

if TYPE_CHECKING:
    from storages.bdb.storage import BDBError, BDBStorage

#: The environment directory inside the directory the runner gives a trial.
ENV_DIR = "bdb"


def berkeleydb_missing() -> str | None:
    """Why berkeleydb cannot be imported here, or None."""
    try:
        import berkeleydb.db  # noqa: F401
    except ImportError as e:
        return (
            f"berkeleydb is not importable ({e}); install the 'bdb' extra "
            "(needs Debian's libdb-dev)"
        )
    return None


def bdb_options(options: StorageOptions) -> dict[str, Any]:
    """BDBStorage keyword arguments from the suite's options (validated)."""
    kwargs: dict[str, Any] = {"durability": options.bdb_durability}
    if options.bdb_cache_size is not None:
        kwargs["cache_size"] = options.bdb_cache_size
    BDBOptions.from_kwargs(kwargs)
    return kwargs


class BDBFactory(StorageFactory):
    name = "bdb"
    description = "BDBStorage: Berkeley DB transactional B-trees on local disk"
    persistent = True

    def __init__(self, options: StorageOptions | None = None) -> None:
        super().__init__(options)
        self._kwargs = bdb_options(self.options)

    def unavailable(self) -> str | None:
        return berkeleydb_missing()

    def open(self, directory: Path) -> Store:
        reason = berkeleydb_missing()
        if reason:
            raise StorageError(reason)
        from storages.bdb.storage import BDBStorage

        path = Path(directory) / ENV_DIR
        return ZODBStore(
            self.name, lambda: BDBStorage(path, **self._kwargs), self.options
        )


def bdbstorage_section(directory: Path, kwargs: dict[str, Any]) -> str:
    """ZConfig section serving a BDBStorage in *directory*/bdb."""
    lines = ["<bdbstorage 1>", f"  path {Path(directory) / ENV_DIR}"]
    for key, value in kwargs.items():
        lines.append(f"  {key.replace('_', '-')} {value}")
    lines.append("</bdbstorage>")
    return "\n".join(lines) + "\n"


class ZEOBDBFactory(ZEOFactory):
    """ZEO in front of a BDBStorage: runzeo loads this package's ZConfig
    component and serves a <bdbstorage> section."""

    name = "zeo+bdb"
    description = "ZEO client and a runzeo server (BDBStorage) over TCP on 127.0.0.1"
    imports = ("storages.bdb",)

    def __init__(self, options: StorageOptions | None = None) -> None:
        super().__init__(options)
        self._kwargs = bdb_options(self.options)

    def served(self, directory: Path) -> str:  # type: ignore[override]
        return bdbstorage_section(directory, self._kwargs)

    def unavailable(self) -> str | None:
        return berkeleydb_missing()

    def open(self, directory: Path) -> Store:
        if self.options.zeo_address is None:
            reason = berkeleydb_missing()
            if reason:
                raise StorageError(reason)
        return super().open(directory)


def __getattr__(name: str) -> Any:
    # BDBStorage and BDBError live in storage.py, which imports berkeleydb.
    if name in ("BDBStorage", "BDBError"):
        from storages.bdb import storage

        return getattr(storage, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DURABILITY",
    "BDBError",
    "BDBFactory",
    "BDBOptions",
    "BDBStorage",
    "ZEOBDBFactory",
    "berkeleydb_missing",
]
