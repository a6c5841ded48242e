"""BDBStorage against FileStorage, operation by operation, in one run.

Each operation is one benchmark group with a file and a bdb member; set-up
(building the data, reopening for a cold cache) is never timed.  Both
storages use their defaults, so both fsync every commit.

    pytest tests/benchmarks/test_bdb_vs_file.py --benchmark-enable \\
        --benchmark-group-by=group --benchmark-columns=min,median,max

N (objects per operation) is 10,000 unless VFAB_BDB_BENCH_N says
otherwise.  Without --benchmark-enable (the project's default) each
benchmark runs once, as a test.
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("berkeleydb")

import transaction  # noqa: E402
import ZODB  # noqa: E402
from BTrees.OOBTree import OOBTree  # noqa: E402
from persistent.mapping import PersistentMapping  # noqa: E402
from ZODB.Connection import TransactionMetaData  # noqa: E402
from ZODB.FileStorage import FileStorage  # noqa: E402
from ZODB.serialize import referencesf  # noqa: E402
from ZODB.tests.MinPO import MinPO  # noqa: E402
from ZODB.tests.StorageTestBase import zodb_pickle  # noqa: E402
from ZODB.utils import p64, u64, z64  # noqa: E402

from storages.bdb.storage import BDBStorage  # noqa: E402
from tests.benchmarks.options import measuring, selected_storages  # noqa: E402

N = int(os.environ.get("VFAB_BDB_BENCH_N", "10000"))
REVISIONS = 100  # of the object loadBefore reads
LOADS = 1000  # loadBefore calls per round

BACKENDS = ["file", "bdb"]


class Opened:
    """A storage of one backend in a directory, with a DB and a connection;
    reopen() starts again with empty caches."""

    def __init__(self, backend: str, directory: Path) -> None:
        self.backend = backend
        self.directory = directory
        self.db: Any = None
        self.open()

    def open(self) -> None:
        if self.backend == "file":
            storage: Any = FileStorage(str(self.directory / "Data.fs"))
        else:
            storage = BDBStorage(self.directory / "bdb")
        self.db = ZODB.DB(storage)
        self.tm = transaction.TransactionManager()
        self.conn = self.db.open(self.tm)
        self.root = self.conn.root()

    @property
    def storage(self) -> Any:
        return self.db.storage

    def reopen(self) -> None:
        self.close()
        self.open()

    def close(self) -> None:
        if self.db is not None:
            self.tm.abort()
            self.conn.close()
            self.db.close()
            self.db = None


@pytest.fixture
def workdir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="bdb-vs-file-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(params=BACKENDS)
def opened(request: pytest.FixtureRequest, workdir: Path) -> Iterator[Opened]:
    # Measured only when bdb is among the --storage choices (tox -e bdb);
    # the normal run, with benchmarks disabled, runs each once as a test.
    config = request.config
    if measuring(config) and "bdb" not in selected_storages(config):
        pytest.skip("compares bdb with file: select it with --storage bdb")
    db = Opened(request.param, workdir)
    yield db
    db.close()


def items(n: int, start: int = 0) -> OOBTree:
    """n small objects in a BTree (not one big list: see the pickler-memo
    trap in scenarios/sweep/sweep.py)."""
    tree = OOBTree()
    for i in range(start, start + n):
        tree[i] = PersistentMapping({"name": f"item {i}", "value": i, "tags": ["x"]})
    return tree


def note(benchmark: Any, opened: Opened, group: str) -> None:
    benchmark.group = f"bdb-vs-file: {group}"
    benchmark.extra_info.update(storage=opened.backend, objects=N)


def test_commit_new_objects(benchmark: Any, opened: Opened) -> None:
    note(benchmark, opened, f"commit {N} new objects")
    rounds = iter(range(1_000_000))

    def setup() -> None:
        opened.root[f"batch {next(rounds)}"] = items(N)

    benchmark.pedantic(opened.tm.commit, setup=setup, rounds=10, iterations=1)
    assert len(opened.storage) >= N


def test_update_objects(benchmark: Any, opened: Opened) -> None:
    note(benchmark, opened, f"commit updates of {N} objects")
    opened.root["items"] = items(N)
    opened.tm.commit()
    values = iter(range(1_000_000))
    last = [-1]

    def setup() -> None:
        last[0] = value = next(values)
        for item in opened.root["items"].values():
            item["value"] = value

    benchmark.pedantic(opened.tm.commit, setup=setup, rounds=10, iterations=1)
    opened.reopen()  # read back from the storage, not the object cache
    assert last[0] >= 0
    assert {item["value"] for item in opened.root["items"].values()} == {last[0]}
    assert len(opened.root["items"]) == N


def test_cold_load_objects(benchmark: Any, opened: Opened) -> None:
    note(benchmark, opened, f"cold load of {N} objects")
    opened.root["items"] = items(N)
    opened.tm.commit()

    def setup() -> None:
        opened.reopen()  # empty object cache; the storage opened, untimed

    def load() -> int:
        return sum(item["value"] for item in opened.root["items"].values())

    total = benchmark.pedantic(load, setup=setup, rounds=10, iterations=1)
    assert total == N * (N - 1) // 2


def test_load_before_on_revised_object(benchmark: Any, opened: Opened) -> None:
    note(benchmark, opened, f"{LOADS} loadBefore on a {REVISIONS}-revision object")
    storage = opened.storage
    oid = storage.new_oid()
    tids = []
    serial = z64
    for i in range(REVISIONS):
        t = TransactionMetaData()
        storage.tpc_begin(t)
        storage.store(oid, serial, zodb_pickle(MinPO(i)), "", t)
        storage.tpc_vote(t)
        serial = storage.tpc_finish(t)
        tids.append(serial)
    rng = random.Random(42)
    # Just after a revision: loadBefore must find that one.
    wanted = [rng.randrange(REVISIONS) for _ in range(LOADS)]
    befores = [p64(u64(tids[i]) + 1) for i in wanted]

    def load_before() -> None:
        for before in befores:
            storage.loadBefore(oid, before)

    benchmark.pedantic(load_before, rounds=10, iterations=1)
    assert storage.loadBefore(oid, befores[0])[1] == tids[wanted[0]]


def test_pack(benchmark: Any, opened: Opened) -> None:
    note(benchmark, opened, f"pack {N} objects x 2 revisions + garbage")

    def setup() -> None:
        # A fresh database each round: N live objects with an old revision
        # each, and N/10 unreachable ones.
        opened.close()
        shutil.rmtree(opened.directory)
        opened.directory.mkdir()
        opened.open()
        opened.root["items"] = items(N)
        opened.root["garbage"] = items(N // 10, start=N)
        opened.tm.commit()
        for item in opened.root["items"].values():
            item["value"] = -1
        del opened.root["garbage"]
        opened.tm.commit()
        time.sleep(0.01)  # the pack time is after both commits

    def pack() -> None:
        opened.storage.pack(time.time(), referencesf)

    benchmark.pedantic(pack, setup=setup, rounds=3, iterations=1)
    assert len(opened.storage) < N + N // 10
