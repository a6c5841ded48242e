"""Checking an existing BDBStorage environment without writing to it.

Berkeley DB has no read-only open of a transactional environment: opening
one joins or rebuilds its region files (__db.*), runs recovery (DB_RECOVER)
and checkpoints, and opening a directory that holds no environment creates
one (~20 MB of region and log files).  So the check never opens the
environment itself: it looks at the files first (zodb.db must be there, and
the lock free), then copies zodb.db and the log files into a scratch
directory and opens the copy there, as BDBStorage opens it after a crash
(recovery from the logs), reads every transaction and record, and verifies
the database file (Berkeley DB's DB->verify, what db_verify runs).  The
scratch copy is removed; the environment is left byte for byte as found.

An environment a crash left (its last writer killed before its closing
checkpoint) opens, but its recovery writes what the log holds into zodb.db:
the check sees the copy's zodb.db change and says so (NeedsRecovery),
leaving the environment as it is; recover_environment() runs that recovery
on the environment itself, on request (--recover).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from storages.base import DamagedStorage, NeedsRecovery, StorageError

#: What repairs a copy of a damaged environment (Debian: db5.3-util names
#: them db5.3_recover, db5.3_verify).
BDB_REPAIR = "db_recover -h COPY, then db_verify COPY/zodb.db"

#: The environment's files: data, lock (format.py's DATA_FILE, LOCK_FILE;
#: repeated so that the check needs no berkeleydb until it opens the copy).
DATA_FILE = "zodb.db"
LOCK_FILE = "zodb.lock"


def _lock_held(path: Path) -> bool:
    from storages.file import lock_held

    return lock_held(path)


def check_environment(path: Path) -> int:
    """Check the BDBStorage environment in the directory *path*, writing
    nothing there; return its number of transactions.

    StorageError (one line) when *path* is no environment (missing, a
    file, or a directory without zodb.db: "not a Berkeley DB environment")
    or another process holds it; DamagedStorage when recovery, reading or
    verification of a copy fails.
    """
    path = Path(path)
    if not path.exists():
        raise StorageError(f"{path} does not exist: not a Berkeley DB environment")
    if not path.is_dir():
        raise StorageError(
            f"{path} is a file, not a Berkeley DB environment (a directory)"
        )
    try:
        entries = sorted(os.listdir(path))
    except OSError as e:
        raise StorageError(f"cannot list {path}: {e.strerror}") from None
    if DATA_FILE not in entries:
        held = f"it holds {entries[0]!r}" if entries else "it is empty"
        raise StorageError(
            f"{path} is not a Berkeley DB environment of BDBStorage (no "
            f"{DATA_FILE}; {held}); nothing was opened or written"
        )
    if _lock_held(path / LOCK_FILE):
        raise StorageError(
            f"{path} is locked: another BDBStorage has it open (share it through ZEO)"
        )
    logs = [n for n in entries if n.startswith("log.")]
    from storages.bdb.options import BDBError, check_tmpdir

    try:
        check_tmpdir()  # the copy is made there
    except BDBError as e:
        raise StorageError(f"cannot check {path}: {e}") from None
    scratch = Path(tempfile.mkdtemp(prefix="vfab-bdb-check-"))
    try:
        copy = scratch / "env"
        copy.mkdir()
        try:
            for name in (DATA_FILE, *logs):
                shutil.copyfile(path / name, copy / name)
        except OSError as e:
            raise StorageError(f"cannot read {path}: {e.strerror}") from None
        return _check_in_child(path, copy)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _check_in_child(path: Path, copy: Path) -> int:
    """_check_copy in a child process: libdb can crash (SIGSEGV) on a
    damaged file, which must end in one line, not in the caller's death.
    A want of memory (the child's, or Berkeley DB's for its regions) is
    said as such, a StorageError: it is not damage."""
    try:
        child = subprocess.run(
            [sys.executable, "-c", _CHILD, str(path), str(copy)],
            capture_output=True,
            text=True,
            env=dict(
                os.environ,
                PYTHONPATH=os.pathsep.join(
                    filter(
                        None,
                        (
                            str(Path(__file__).resolve().parents[2]),
                            os.environ.get("PYTHONPATH", ""),
                        ),
                    )
                ),
            ),
        )
    except OSError as e:  # no process to check it in (ENOMEM, EAGAIN)
        raise StorageError(f"cannot check {path}: {e.strerror}") from None
    lines = child.stdout.strip().splitlines()
    if child.returncode == 0 and lines:
        answer = json.loads(lines[-1])
        if "memory" in answer:
            raise StorageError(answer["memory"])
        if "transactions" in answer and answer.get("recovered"):
            raise NeedsRecovery(
                str(path),
                f"{path} was not closed: a crash left work for Berkeley DB's "
                f"recovery (its log holds changes {DATA_FILE} lacks, "
                f"{answer['transactions']} transactions once recovered); nothing "
                "was changed (serve or populate --recover on its directory runs "
                "the recovery)",
            )
        if "transactions" in answer:
            return int(answer["transactions"])
        raise DamagedStorage(str(path), answer["where"], answer["what"], BDB_REPAIR)
    if child.returncode < 0:
        how = (
            f"Berkeley DB crashed reading it ({signal.Signals(-child.returncode).name})"
        )
    else:
        err = [ln for ln in child.stderr.strip().splitlines() if ln.strip()]
        how = err[-1] if err else f"the check exited with status {child.returncode}"
        if how.startswith("MemoryError"):
            raise StorageError(
                f"cannot check {path}: out of memory in the check's process "
                "(not damage; nothing was changed)"
            )
    raise DamagedStorage(str(path), "(its check failed)", how, BDB_REPAIR)


#: What the child runs: the check of a copy, its answer as one JSON line.
_CHILD = """
import json, sys
from pathlib import Path
from storages.base import DamagedStorage
from storages.bdb.check import _check_copy
from storages.bdb.options import BDBOutOfMemory
try:
    n, recovered = _check_copy(Path(sys.argv[1]), Path(sys.argv[2]))
    print(json.dumps({"transactions": n, "recovered": recovered}))
except DamagedStorage as e:
    print(json.dumps({"where": e.where, "what": e.what}))
except BDBOutOfMemory as e:
    print(json.dumps({"memory": str(e).replace(sys.argv[2], sys.argv[1])}))
"""


def _check_copy(path: Path, copy: Path) -> tuple[int, bool]:
    """Open the copy *copy* of the environment *path*, read it all, verify
    it; DamagedStorage naming *path*.  Its transactions, and whether
    opening it (Berkeley DB's recovery) changed its zodb.db: work a crash
    left."""
    from berkeleydb import db

    def damaged(where: str, e: BaseException) -> DamagedStorage:
        if isinstance(e, db.DBError) and len(e.args) > 1:
            what = str(e.args[1])  # (errno, "message -- detail")
        else:
            what = str(e)
        # One line, naming the environment rather than the scratch copy.
        what = " ".join(what.replace(str(copy), str(path)).split())
        return DamagedStorage(str(path), where, what, BDB_REPAIR)

    # BDBStorage logs a failed checkpoint when a damaged copy is closed:
    # the one line the check raises says it all.
    quiet = logging.getLogger("storages.bdb.storage")
    was_disabled, quiet.disabled = quiet.disabled, True
    before = _digest(copy / DATA_FILE)
    try:
        count = _read_copy(copy, damaged)
    finally:
        quiet.disabled = was_disabled
    return count, _digest(copy / DATA_FILE) != before


def _digest(path: Path) -> str:
    import hashlib

    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def recover_environment(path: Path) -> str | None:
    """Run Berkeley DB's recovery on the environment *path* when the check
    finds work a crash left there (NeedsRecovery), by opening it as
    BDBStorage does (DB_RECOVER) and closing it (a checkpoint), then check it
    again; one line saying so, or None when there was nothing to recover.
    Damage is refused as by check_environment, nothing changed."""
    from storages.bdb.options import BDBError
    from storages.bdb.storage import BDBStorage

    path = Path(path)
    try:
        check_environment(path)
    except NeedsRecovery:
        pass
    else:
        return None
    try:
        BDBStorage(path).close()
    except BDBError as e:
        raise StorageError(f"cannot recover {path}: {e}") from None
    count = check_environment(path)
    return (
        f"{path}: ran Berkeley DB's recovery (the log of the crashed writer "
        f"written into {DATA_FILE}); {count} transactions"
    )


def _read_copy(
    copy: Path, damaged: Callable[[str, BaseException], DamagedStorage]
) -> int:
    from berkeleydb import db

    from storages.bdb.options import BDBError, BDBOutOfMemory
    from storages.bdb.storage import BDBStorage
    from storages.fscheck import record_parses

    count = 0
    try:
        storage = BDBStorage(copy)
    except BDBOutOfMemory:
        raise
    except BDBError as e:
        raise damaged("(a copy does not open, with recovery)", e) from None
    try:
        last = None
        for txn in storage.iterator():
            last = txn.tid
            for record in txn:
                if record.data is not None and not record_parses(record.data):
                    raise ValueError(
                        f"the data of oid {record.oid.hex()} is not a pickle"
                    )
            count += 1
    except MemoryError:
        raise BDBOutOfMemory(
            f"out of memory reading {copy} (not damage; nothing was changed)"
        ) from None
    except Exception as e:  # any failure reading damaged data
        after = f", after tid {last.hex()}" if last else ""
        raise damaged(f"at transaction {count + 1}{after}", e) from None
    finally:
        with contextlib.suppress(Exception):  # a panicked environment
            storage.close()
    # Berkeley DB's own check of every page and table of the database file.
    try:
        db.DB().verify(str(copy / DATA_FILE))
    except db.DBError as e:
        raise damaged(f"in {DATA_FILE} (verification fails)", e) from None
    return count
