"""file: ZODB FileStorage (Data.fs) in the directory the runner gives.

The runner gives each trial a fresh temporary directory; an existing Data.fs
is opened, never truncated.
"""

from __future__ import annotations

import os
from pathlib import Path

from storages.base import (
    StorageError,
    StorageFactory,
    Store,
    Wrap,
    ZODBStore,
    wrapping,
)


def open_filestorage(path: Path, read_only: bool = False):  # type: ignore[no-untyped-def]
    """FileStorage at *path*, with the failures a user can fix turned into
    StorageError (locked by another process, unwritable, corrupt)."""
    from zc.lockfile import LockError
    from ZODB.FileStorage import FileStorage
    from ZODB.FileStorage.FileStorage import FileStorageError
    from ZODB.FileStorage.format import CorruptedError

    try:
        return FileStorage(str(path), read_only=read_only)
    except LockError:
        raise StorageError(f"{path} is locked: another process has it open") from None
    except (CorruptedError, FileStorageError) as e:
        raise StorageError(
            f"{path} is not a usable FileStorage ({type(e).__name__})"
        ) from None
    except OSError as e:
        raise StorageError(f"cannot open {path}: {e.strerror}") from None


#: Files beside Data.fs that are not the storage: FileStorage's scratch file
#: for the transaction being committed (it keeps the size of the largest
#: one), its copy from before a pack (a backup the administrator removes)
#: and its lock.  Leaving them out makes a phase's size change the bytes the
#: storage wrote, and the size after a pack the packed size.
NOT_STORAGE = (".tmp", ".old", ".lock")


def directory_size(directory: Path, not_storage: tuple[str, ...] = NOT_STORAGE) -> int:
    """Bytes of the regular files below *directory* that make up the storage:
    all but those whose names end with one of *not_storage* (a factory's
    ``not_storage``)."""
    total = 0
    for dirpath, _, names in os.walk(directory):
        for n in names:
            if n.endswith(not_storage):
                continue
            try:
                total += os.stat(os.path.join(dirpath, n)).st_size
            except FileNotFoundError:
                pass
    return total


def filestorage_section(directory: Path) -> str:
    """ZConfig section serving Data.fs in *directory*."""
    return f"<filestorage 1>\n  path {Path(directory) / 'Data.fs'}\n</filestorage>\n"


class FileFactory(StorageFactory):
    name = "file"
    description = "ZODB FileStorage (Data.fs) on local disk"
    keeps_directory = True
    servable = True
    wraps_storage = True
    not_storage = NOT_STORAGE

    def served_section(self, directory: Path) -> tuple[str, tuple[str, ...]]:
        return filestorage_section(directory), ()

    def open(self, directory: Path, wrap: Wrap | None = None) -> Store:
        path = Path(directory) / "Data.fs"
        return ZODBStore(
            self.name,
            wrapping(lambda: open_filestorage(path), wrap),
            self.options,
            size=lambda: directory_size(path.parent, self.not_storage),
        )
