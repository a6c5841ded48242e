"""The suite's bdb and zeo+bdb storages: factories over BDBStorage.

Their options (--bdb-cache-size, --bdb-durability) are BDBFactoryOptions;
BDBStorage's own errors (ZODB's StorageError) become the suite's
StorageError here, where a store is opened and used, so that the command
line reports them in one line, exit status 2.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from storages.base import (
    DBOptions,
    OptionGroup,
    StorageError,
    StorageFactory,
    Store,
    URIScheme,
)
from storages.bdb.options import (
    DURABILITY,
    MAX_CACHE_BYTES,
    MIB,
    BDBError,
    BDBOptions,
    check_tmpdir,
)
from storages.options import add_size_option, at_least
from storages.zeo import ZEOFactory
from storages.zodbstore import Wrap, ZODBStore, wrapping

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


@contextlib.contextmanager
def suite_errors() -> Iterator[None]:
    """BDBStorage's errors as the suite's StorageError (same one line)."""
    try:
        yield
    except BDBError as e:
        raise StorageError(str(e)) from None


@dataclasses.dataclass(frozen=True)
class BDBFactoryOptions(OptionGroup):
    """Options of the Berkeley DB storages (bdb, zeo+bdb).

    bdb_cache_size: Berkeley DB cache, in bytes (None: the storage default).
    bdb_durability: "sync" (default) or "write-nosync" (see DURABILITY).
    """

    bdb_cache_size: int | None = None
    bdb_durability: str = "sync"

    @classmethod
    def add_arguments(cls, group: argparse._ArgumentGroup) -> None:
        add_size_option(
            group,
            "--bdb-cache-size",
            "BYTES",
            "Berkeley DB page cache in bytes (default: 64 MiB)",
            at_least(MIB, MAX_CACHE_BYTES),
        )
        group.add_argument(
            "--bdb-durability",
            choices=tuple(DURABILITY),
            default="sync",
            help="sync: a commit survives an OS crash (default); write-nosync: "
            "it survives a process crash only",
        )

    def storage_kwargs(self) -> dict[str, Any]:
        """BDBStorage keyword arguments (validated: StorageError if bad)."""
        kwargs: dict[str, Any] = {"durability": self.bdb_durability}
        if self.bdb_cache_size is not None:
            kwargs["cache_size"] = self.bdb_cache_size
        with suite_errors():
            BDBOptions.from_kwargs(kwargs)
        return kwargs


def bdbstorage_section(directory: Path, kwargs: dict[str, Any]) -> str:
    """ZConfig section serving a BDBStorage in *directory*/bdb."""
    lines = ["<bdbstorage 1>", f"  path {Path(directory) / ENV_DIR}"]
    for key, value in kwargs.items():
        lines.append(f"  {key.replace('_', '-')} {value}")
    lines.append("</bdbstorage>")
    return "\n".join(lines) + "\n"


class BDBStore(ZODBStore):
    """A ZODBStore over a BDBStorage, its errors the suite's."""

    def _open(self) -> None:
        with suite_errors():
            super()._open()

    def commit(self) -> None:
        with suite_errors():
            super().commit()

    def pack(self) -> None:
        with suite_errors():
            super().pack()


#: The magic numbers of Berkeley DB's btree, hash, queue and recno files.
BDB_MAGIC = (0x053162, 0x061561, 0x042253, 0x040988)


class BDBFactory(StorageFactory):
    name = "bdb"
    description = "BDBStorage: Berkeley DB transactional B-trees on local disk"
    option_groups = (DBOptions, BDBFactoryOptions)
    keeps_directory = True
    user_errors = (BDBError,)
    uri_schemes = (URIScheme("bdb", local=True, section="bdbstorage"),)

    @classmethod
    def check_at(
        cls, path: Path, must_exist: bool = False, read_only: bool = False
    ) -> None:
        """Check the BDBStorage environment directory *path* a command is
        about to open.  Missing or empty: fine unless *must_exist*
        (BDBStorage creates one there)."""
        if not must_exist and (
            not path.exists() or (path.is_dir() and not any(path.iterdir()))
        ):
            return
        reason = berkeleydb_missing()
        if reason:
            raise StorageError(reason)
        from storages.bdb.check import check_environment

        check_environment(path)

    @classmethod
    def file_kind(cls, path: Path, head: bytes) -> str | None:
        # Berkeley DB's btree, hash, queue and recno magic at offset 12, in
        # either byte order; its environment's region and log files by name.
        if len(head) == 16 and any(
            int.from_bytes(head[12:16], order) in BDB_MAGIC
            for order in ("little", "big")
        ):
            return "a Berkeley DB file"
        name = path.name
        if name.startswith(("__db.", "log.")) and name.split(".", 1)[1].isdigit():
            return "a Berkeley DB environment's file"
        return None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._kwargs = self.options.get(BDBFactoryOptions).storage_kwargs()

    def unavailable(self) -> str | None:
        return berkeleydb_missing()

    def preflight(self) -> None:
        with suite_errors():
            check_tmpdir()

    def served_section(self, directory: Path) -> tuple[str, tuple[str, ...]]:
        # runzeo loads this package's ZConfig component (component.xml).
        return bdbstorage_section(directory, self._kwargs), ("storages.bdb",)

    def check_existing(self, directory: Path, recover: bool = False) -> str | None:
        reason = berkeleydb_missing()
        if reason:
            raise StorageError(reason)
        from storages.bdb.check import check_environment, recover_environment

        if recover:
            return recover_environment(Path(directory) / ENV_DIR)
        check_environment(Path(directory) / ENV_DIR)
        return None

    def open(self, directory: Path, wrap: Wrap | None = None) -> Store:
        reason = berkeleydb_missing()
        if reason:
            raise StorageError(reason)
        from storages.bdb.storage import BDBStorage

        path = Path(directory) / ENV_DIR
        return BDBStore(
            self.name,
            wrapping(lambda: BDBStorage(path, **self._kwargs), wrap),
            self.options,
        )


class ZEOBDBFactory(ZEOFactory):
    """ZEO in front of a BDBStorage: runzeo serves bdb's served_section()."""

    name = "zeo+bdb"
    description = "ZEO client and a runzeo server (BDBStorage) over TCP on 127.0.0.1"
    base = BDBFactory
