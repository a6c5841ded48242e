"""The storages' errors for bad input (StorageError and the damage it
finds), and an exception as one line for the user: the one helper every
module uses (storages.named, storages.relstorage, scenarios.errors
re-exports it).  storages.base re-exports the error types."""

from __future__ import annotations

from typing import Any


def first_line(text: object) -> str:
    """The first line of str(*text*) that is not blank, stripped ("" if
    there is none)."""
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    return lines[0] if lines else ""


def one_line(error: BaseException, with_type: bool = True) -> str:
    """*error* as one line: an OSError's file and reason; a database
    driver's message (pg8000's {"M": ...}, MySQL drivers' (code, message));
    else the first line of its message; after its type name unless not
    *with_type* (the type alone when there is no message)."""
    if isinstance(error, OSError):
        reason = error.strerror or first_line(error) or type(error).__name__
        names = [str(n) for n in (error.filename, error.filename2) if n]
        return f"{' -> '.join(names)}: {reason}" if names else reason
    args: tuple[Any, ...] = getattr(error, "args", ())
    if args and isinstance(args[0], dict):  # pg8000
        message = first_line(args[0].get("M", args[0]))
    elif len(args) >= 2 and isinstance(args[0], int):  # MySQLdb, PyMySQL
        message = first_line(f"({args[0]}) {args[1]}")
    else:
        message = first_line(error)
    kind = type(error).__name__
    if not with_type:
        return message or kind
    return f"{kind}: {message}" if message else kind


class StorageError(Exception):
    """A storage cannot be used as asked (bad option, unreachable server,
    port in use, locked or corrupt database).

    str() of it is one line meant for the user; the CLI prints it on stderr
    and exits with status 2.
    """


class NoDatabase(StorageError):
    """Nothing to open read-only where the storage would create a database
    when opened (an empty SQLite data_dir): refused, nothing created."""


class DamagedStorage(StorageError):
    """A database that is there but not whole, found by a read-only check
    (StorageFactory.check_existing); nothing was changed.

    str() is one line: what is damaged, where (*where* reads after "is
    damaged": "at byte 4242 (transaction 3)"), and what repairs a copy.
    """

    def __init__(self, path: str, where: str, what: str, repair: str) -> None:
        super().__init__(
            f"{path} is damaged {where}: {what}; nothing was changed "
            f"(repair a copy: {repair})"
        )
        self.path = path
        self.where = where
        self.what = what
        self.repair = repair


class NeedsRecovery(DamagedStorage):
    """A database whose only fault is what a crash leaves, work its
    storage's recovery would do when it is next opened for writing; left as
    it is unless the user asks for recovery (--recover:
    StorageFactory.check_existing with recover).  str() is one line saying
    what the crash left and that --recover runs the recovery."""

    def __init__(self, path: str, message: str) -> None:
        StorageError.__init__(self, message)
        self.path = path
        self.where = ""
        self.what = message
        self.repair = "--recover"


class CrashCutStorage(NeedsRecovery):
    """A database whose only fault is what a crash leaves: a last transaction
    that was never finished (FileStorage: cut short, or its status still
    'c'), which nothing acknowledged.  Left as it is unless the user asks
    for recovery (StorageFactory.check_existing with recover, --recover).

    str() is one line: which transaction, how many bytes, and that
    --recover drops it (*recovery* says how the bytes are kept).
    """

    def __init__(
        self,
        path: str,
        transaction: int,
        offset: int,
        nbytes: int,
        how: str,
        recovery: str,
    ) -> None:
        super().__init__(
            path,
            f"{path} ends in a transaction cut by a crash: transaction "
            f"{transaction} (at byte {offset}, {nbytes} bytes) {how}; nothing "
            f"in it was acknowledged; nothing was changed ({recovery})",
        )
        self.where = f"at byte {offset}"
        self.what = how
        self.repair = recovery
        self.transaction = transaction
        self.offset = offset
        self.nbytes = nbytes
