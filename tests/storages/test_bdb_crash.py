"""Crash durability: SIGKILL a BDBStorage writer in the middle of a stream
of commits, many times; every transaction whose tpc_finish had returned
must be there after reopening, and every object must load."""

from __future__ import annotations

import os
import random
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("berkeleydb")

from ZODB.tests.StorageTestBase import zodb_unpickle  # noqa: E402
from ZODB.utils import load_current, z64  # noqa: E402

from storages.bdb.storage import BDBStorage  # noqa: E402

#: Each transaction writes OBJECTS new objects and a new revision of the
#: root, whose value counts the transactions; it prints "tid oid oid ..."
#: once tpc_finish has returned.
WRITER = """
import os, sys
from ZODB.Connection import TransactionMetaData
from ZODB.POSException import POSKeyError
from ZODB.tests.MinPO import MinPO
from ZODB.tests.StorageTestBase import zodb_pickle, zodb_unpickle
from ZODB.utils import load_current, z64
from storages.bdb.storage import BDBStorage

path, durability, objects = sys.argv[1], sys.argv[2], int(sys.argv[3])
storage = BDBStorage(path, durability=durability, cache_size=8 << 20)
try:
    data, serial = load_current(storage, z64)
    count = zodb_unpickle(data).value
except POSKeyError:
    serial, count = z64, 0
out = sys.stdout
while True:
    t = TransactionMetaData(description=f"commit {count + 1}")
    storage.tpc_begin(t)
    oids = [storage.new_oid() for _ in range(objects)]
    for oid in oids:
        storage.store(oid, z64, zodb_pickle(MinPO(os.urandom(200))), "", t)
    storage.store(z64, serial, zodb_pickle(MinPO(count + 1)), "", t)
    storage.tpc_vote(t)
    serial = storage.tpc_finish(t)
    count += 1
    out.write(" ".join(x.hex() for x in [serial] + oids) + "\\n")
    out.flush()
"""

KILLS = 8


def run_and_kill(env: Path, durability: str, rng: random.Random) -> list[list[bytes]]:
    """Start the writer, SIGKILL it after a random number of commits and a
    random delay; the lines it printed, parsed."""
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(env), durability, str(rng.randint(1, 50))],
        stdout=subprocess.PIPE,
    )
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    wanted = rng.randint(1, 25)
    output = b""
    deadline = time.monotonic() + 30
    while output.count(b"\n") < wanted and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 1.0)
        if ready:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            output += chunk
    time.sleep(rng.uniform(0, 0.005))  # land anywhere in the commit cycle
    proc.send_signal(signal.SIGKILL)
    output += proc.stdout.read()  # what was printed before the kill
    proc.stdout.close()
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the writer died on its own"
    assert output.count(b"\n") >= wanted, "the writer made no progress"
    # A line cut by the kill was not fully printed: not a promise yet.
    lines = output.split(b"\n")[:-1]
    return [[bytes.fromhex(x.decode()) for x in line.split()] for line in lines]


@pytest.mark.subprocess
@pytest.mark.parametrize("durability", ["sync", "write-nosync"])
def test_sigkill_loses_no_finished_transaction(tmp_path: Path, durability: str) -> None:
    env = tmp_path / "env"
    rng = random.Random(durability)
    reported: list[list[bytes]] = []
    for _ in range(KILLS):
        reported += run_and_kill(env, durability, rng)
        storage = BDBStorage(env, cache_size=8 << 20)
        try:
            tids = {}
            for txn in storage.iterator():
                tids[txn.tid] = {record.oid for record in txn}
                for record in txn:  # every record of every transaction loads
                    assert storage.loadSerial(record.oid, txn.tid) == record.data
            for tid, *oids in reported:
                assert tid in tids, "a transaction that had finished is lost"
                assert tids[tid] == {z64, *oids}  # all of it: atomic
                for oid in oids:
                    load_current(storage, oid)
            # Nothing half-done either: the root counts the transactions.
            root = zodb_unpickle(load_current(storage, z64)[0]).value
            assert root == len(tids) >= len(reported)
            assert len(storage) == 1 + sum(len(oids) for oids in tids.values()) - len(
                tids
            )
        finally:
            storage.close()


FIRST_OPEN_CRASH = """
import os, signal, sys
from berkeleydb import db
from storages.bdb import storage

def create_then_die(self, fresh):
    # zodb.db is created inside a transaction that never commits.
    txn = self._env.txn_begin()
    table = db.DB(self._env)
    flags = db.DB_CREATE | db.DB_THREAD | db.DB_MULTIVERSION
    table.open(storage.DATA_FILE, "data", db.DB_BTREE, flags, txn=txn)
    self._env.log_flush()
    os.kill(os.getpid(), signal.SIGKILL)

storage.BDBStorage._open_tables = create_then_die
storage.BDBStorage(sys.argv[1])
"""


@pytest.mark.subprocess
def test_sigkill_during_the_first_open(tmp_path: Path) -> None:
    env = tmp_path / "env"
    proc = subprocess.run([sys.executable, "-c", FIRST_OPEN_CRASH, str(env)])
    assert proc.returncode == -signal.SIGKILL
    assert (env / "zodb.db").exists()  # half made
    storage = BDBStorage(env, cache_size=8 << 20)  # recovery undoes it
    try:
        assert len(storage) == 0 and storage.lastTransaction() == z64
    finally:
        storage.close()
