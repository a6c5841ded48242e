"""file: ZODB FileStorage (Data.fs) in the directory the runner gives.

The runner gives each trial a fresh temporary directory.  An existing
Data.fs is checked whole, read-only, before anything opens it read-write
(check_filestorage): FileStorage itself, opened read-write on a damaged
file, truncates it to its last good transaction without a word.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from storages.base import (
    StorageError,
    StorageFactory,
    Store,
    URIScheme,
)
from storages.fscheck import check_filestorage, recover_filestorage
from storages.zodbstore import Wrap, ZODBStore, wrapping


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


def lock_held(lock_path: Path) -> bool:
    """True when another process holds the FileStorage lock file *lock_path*
    (a ZEO server, an application).  Never creates the lock file."""
    try:
        fd = os.open(lock_path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


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
    not_storage = NOT_STORAGE
    uri_schemes = (
        URIScheme("file", read_only=True, local=True, section="filestorage"),
    )

    @classmethod
    def check_at(
        cls, path: Path, must_exist: bool = False, read_only: bool = False
    ) -> None:
        """Check the FileStorage file *path* a command is about to open.
        Missing: fine unless *must_exist* (opening it read-write creates
        it).  Locked by another process: StorageError, unless *read_only*
        (a short last transaction is then a commit in progress)."""
        if path.is_symlink() and not path.exists():
            raise StorageError(
                f"{path} is a symbolic link that leads nowhere (a loop, or a "
                "missing target): no FileStorage to open"
            )
        if not path.exists():
            if must_exist:
                raise StorageError(f"no FileStorage at {path}")
            return
        if not path.is_file():
            raise StorageError(f"{path} is not a file (a FileStorage is one file)")
        held = lock_held(Path(f"{path}.lock"))
        if held and not read_only:
            raise StorageError(f"{path} is locked: another process has it open")
        check_filestorage(path, in_use=held)

    @classmethod
    def held_at(cls, path: Path) -> bool:
        return lock_held(Path(f"{path}.lock"))

    @classmethod
    def file_kind(cls, path: Path, head: bytes) -> str | None:
        if head[:4] in (b"FS21", b"FS30"):  # Python 3's and 2's FileStorage
            return "a FileStorage"
        # Its index, lock, scratch file, a pack's .old, a recovery's .trN.
        stem, dot, _ = path.name.rpartition(".")
        if dot and stem.endswith(".fs") and (path.parent / stem).is_file():
            return f"a file of the FileStorage {stem}"
        return None

    @classmethod
    def path_uri(cls, path: Path) -> str | None:
        fs_path = path / "Data.fs" if path.is_dir() else path
        if not fs_path.is_file():
            raise StorageError(f"no FileStorage at {path} ({fs_path} is missing)")
        return f"file://{fs_path.absolute()}"

    def served_section(self, directory: Path) -> tuple[str, tuple[str, ...]]:
        return filestorage_section(directory), ()

    def check_existing(self, directory: Path, recover: bool = False) -> str | None:
        path = Path(directory) / "Data.fs"
        if not path.is_file():
            raise StorageError(f"no FileStorage in {directory} ({path} is missing)")
        if lock_held(Path(f"{path}.lock")):
            raise StorageError(f"{path} is locked: another process has it open")
        if recover:
            return recover_filestorage(path)
        check_filestorage(path)
        return None

    def open(self, directory: Path, wrap: Wrap | None = None) -> Store:
        path = Path(directory) / "Data.fs"
        return ZODBStore(
            self.name,
            wrapping(lambda: open_filestorage(path), wrap),
            self.options,
            size=lambda: directory_size(path.parent, self.not_storage),
        )
