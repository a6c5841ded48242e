"""BDBStorage options: one documented class of defaults, no berkeleydb needed.

The factory, the ZConfig section, the zodburi resolver and the storage all
validate through BDBOptions, so a bad value fails the same way (a one-line
BDBOptionError) wherever it was typed.  The errors here are ZODB's
POSException.StorageError, not the suite's: BDBStorage stands alone (the
suite's bdb factory translates them).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from ZODB import POSException


class BDBError(POSException.StorageError):
    """A BDBStorage cannot be opened or used as asked; str() of it is one
    line for the user.  ZODB's StorageError, so runzeo and ZODB code that
    catch that see it too."""


class BDBOptionError(BDBError, ValueError):
    """A bad BDBStorage option value (a ValueError as well)."""


class BDBOutOfMemory(BDBError):
    """Berkeley DB could not get the memory it needs (its cache, its
    regions): not damage, and nothing was changed."""


#: The longest environment directory Berkeley DB takes, in bytes: libdb 5.3
#: builds each of its files' paths in a 1,024-byte buffer, and the longest
#: name is a log file's (log.0000000001).  Measured: an environment path of
#: 1,008 bytes opens and reopens, 1,009 fails at the reopen ("Invalid
#: argument -- BDB2509 the log files from a database environment...").
MAX_PATH_BYTES = 1024 - len("/log.0000000001") - 1


def check_path(path: object, what: str = "") -> None:
    """BDBError (one line) when the environment directory *path* is longer
    than Berkeley DB takes; *what* says where the path comes from."""
    import os

    size = len(os.fsencode(os.path.abspath(os.fspath(path))))  # type: ignore[call-overload]
    if size > MAX_PATH_BYTES:
        raise BDBError(
            f"{what or path}: a Berkeley DB environment's path may be at most "
            f"{MAX_PATH_BYTES} bytes (its files' paths must fit in 1,024), and "
            f"this one is {size}: use a shorter directory"
        )


#: Bytes a command adds to TMPDIR for an environment it makes there (a
#: trial's, TMPDIR/vfab-run-XXXXXXXX/vfab-XXXXXXXX/bdb; a ZEO pool's; a
#: check's copy), with room to spare.
TMPDIR_MARGIN = 64


def check_tmpdir() -> None:
    """BDBError (one line) when the environments a command makes
    inside TMPDIR would pass Berkeley DB's path limit: before the work, not
    in a phase."""
    import os
    import tempfile

    tmp = tempfile.gettempdir()
    size = len(os.fsencode(tmp))
    if size + TMPDIR_MARGIN > MAX_PATH_BYTES:
        shown = tmp if len(tmp) <= 48 else tmp[:45] + "..."
        raise BDBError(
            f"TMPDIR {shown} is {size} bytes long: the Berkeley DB environments "
            f"made inside it (up to {TMPDIR_MARGIN} bytes more) would pass its "
            f"limit of {MAX_PATH_BYTES} bytes; set a shorter TMPDIR"
        )


#: Address space Berkeley DB maps beyond its cache (log buffer, locks,
#: transactions, mutexes, threads): measured with the storage's defaults
#: (64 MiB cache: the process grew by 133 MiB, the cache 80 of them, as
#: Berkeley DB adds 25% to a cache under 500 MB), rounded up.
REGIONS_BYTES = 56 << 20


def out_of_memory(
    error: BaseException, path: object, cache_size: int, fatal: bool
) -> BDBOutOfMemory | None:
    """BDBOutOfMemory when *error*, raised opening the environment at
    *path*, comes from a want of memory: ENOMEM, a MemoryError, or (*fatal*:
    Berkeley DB's DB_RUNRECOVERY, what it says when it cannot map its
    regions) while this process cannot map as much as the environment
    needs; else None (the error is the environment's)."""
    import errno
    import mmap
    import resource

    code = error.args[0] if error.args else None
    if not (isinstance(error, MemoryError) or code == errno.ENOMEM):
        if not fatal:
            return None
        try:
            mmap.mmap(-1, cache_size * 5 // 4 + REGIONS_BYTES).close()
        except (OSError, MemoryError, OverflowError):
            pass  # the probe fails too: memory is the cause
        else:
            return None
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    limit = ""
    if soft != resource.RLIM_INFINITY:
        limit = f"; this process's address space is limited to {soft >> 20} MiB"
        limit += " (ulimit -v)"
    return BDBOutOfMemory(
        f"out of memory: Berkeley DB could not map the environment in {path} "
        f"({cache_size >> 20} MiB cache and its regions){limit}; not damage, "
        "nothing was changed: give it more memory or a smaller --bdb-cache-size"
    )


#: Durability mode -> what a commit survives once tpc_finish has returned.
DURABILITY: dict[str, str] = {
    "sync": (
        "the log is flushed to disk (fsync) before tpc_finish returns: "
        "survives a process crash, an OS crash and a power loss"
    ),
    "write-nosync": (
        "the log is written to the OS before tpc_finish returns but not "
        "flushed: survives a process crash (SIGKILL), not an OS crash or "
        "power loss, which can lose the last commits (never corrupts)"
    ),
}
# Berkeley DB's DB_TXN_NOSYNC (log left in the process's buffer) is not
# offered: it lost committed transactions on a plain process crash here.

MIB = 1024 * 1024
#: The largest page cache asked of Berkeley DB (1 TiB; its own limit on
#: 64-bit systems is 10 TB, and set_cachesize takes gigabytes as a C int).
MAX_CACHE_BYTES = 2**40
#: The largest value of each whole-number option (others: a C int).
MAX_OPTION = {"cache_size": MAX_CACHE_BYTES}


@dataclasses.dataclass(frozen=True)
class BDBOptions:
    """Options of BDBStorage(path, **options), each with its default.

    cache_size: bytes of Berkeley DB page cache (shared memory).  Reads of
        pages not in it go to the OS; pages a commit changes stay in it
        until a checkpoint writes them.  At least 1 MiB.
    durability: a key of DURABILITY ("sync" or "write-nosync").
    checkpoint_kbytes: a checkpoint (dirty pages written to zodb.db, log
        files no longer needed removed) runs after the commit that takes
        the log this many KiB past the last checkpoint.  Bounds both the
        disk used by logs and the recovery time after a crash.
    max_locks: Berkeley DB lock table size.  A commit holds one lock per
        page it changes, so one transaction can change at most about
        max_locks pages (100,000 pages of 4 KiB: ~400 MB of records).
    pack_gc: pack() also removes objects unreachable from the root (as
        FileStorage's pack-gc).
    """

    cache_size: int = 64 * MIB
    durability: str = "sync"
    checkpoint_kbytes: int = 16 * 1024
    max_locks: int = 100_000
    pack_gc: bool = True

    def __post_init__(self) -> None:
        if self.durability not in DURABILITY:
            raise BDBOptionError(
                f"bad durability {self.durability!r}; choose from "
                f"{', '.join(DURABILITY)}"
            )
        for name, minimum in (
            ("cache_size", MIB),
            ("checkpoint_kbytes", 1),
            ("max_locks", 1000),
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise BDBOptionError(f"bad {name} {value!r}: expected an integer")
            if value < minimum:
                raise BDBOptionError(f"bad {name} {value}: at least {minimum}")
            if value > MAX_OPTION.get(name, 2**31 - 1):
                raise BDBOptionError(
                    f"bad {name} {value}: at most {MAX_OPTION.get(name, 2**31 - 1)}"
                )
        if not isinstance(self.pack_gc, bool):
            raise BDBOptionError(f"bad pack_gc {self.pack_gc!r}: expected true/false")

    @classmethod
    def from_kwargs(cls, options: Mapping[str, Any]) -> BDBOptions:
        """BDBOptions from keyword arguments; BDBOptionError naming the valid
        options for an unknown one (None means the default)."""
        fields = [f.name for f in dataclasses.fields(cls)]
        unknown = sorted(set(options) - set(fields))
        if unknown:
            raise BDBOptionError(
                f"unknown BDBStorage option {unknown[0]!r}; choose from "
                f"{', '.join(fields)}"
            )
        return cls(**{k: v for k, v in options.items() if v is not None})


def parse_byte_size(text: str) -> int:
    """'67108864', '64MB', '512kb', '1GB' -> bytes; BDBOptionError otherwise."""
    value = text.strip().lower()
    multiplier = 1
    for suffix, factor in (("kb", 1024), ("mb", MIB), ("gb", 1024 * MIB)):
        if value.endswith(suffix):
            value, multiplier = value[: -len(suffix)].strip(), factor
            break
    if not value.isdigit():
        raise BDBOptionError(f"bad byte size {text!r}: expected e.g. 67108864 or 64MB")
    return int(value) * multiplier


def parse_bool(text: str) -> bool:
    value = text.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise BDBOptionError(f"bad boolean {text!r}: expected true or false")
