"""file: ZODB FileStorage (Data.fs) in the directory the runner gives.

The runner gives each trial a fresh temporary directory; an existing Data.fs
is opened, never truncated.
"""

from __future__ import annotations

import os
from pathlib import Path

from storages.base import StorageError, StorageFactory, Store, ZODBStore


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


def directory_size(directory: Path) -> int:
    """Bytes of the regular files below *directory*."""
    total = 0
    for dirpath, _, names in os.walk(directory):
        for n in names:
            try:
                total += os.stat(os.path.join(dirpath, n)).st_size
            except FileNotFoundError:
                pass
    return total


class FileFactory(StorageFactory):
    name = "file"
    description = "ZODB FileStorage (Data.fs) on local disk"
    persistent = True

    def open(self, directory: Path) -> Store:
        path = Path(directory) / "Data.fs"
        return ZODBStore(
            self.name,
            lambda: open_filestorage(path),
            self.options,
            size=lambda: directory_size(path.parent),
        )
