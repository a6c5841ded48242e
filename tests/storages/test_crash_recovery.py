"""After a crash (issue 21, item 6): a Data.fs whose only fault is a last
transaction the crash cut is named as such, left untouched by default, and
recovered only with --recover, the way FileStorage recovers it (the cut
transaction dropped, its bytes kept in Data.fs.trN); damage anywhere else is
still refused.

The last test is the acceptance case: runzeo SIGKILLed under a zeoloop load
in the middle of a commit, serve refusing the file it left, then serving it
with --recover, with every commit a client saw acknowledged still there.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from storages import CrashCutStorage
from storages.file import check_filestorage
from tests.cli.test_failure_paths import assert_one_line, tree_digest, vfab_bench
from tests.conftest import runzeo_pids
from tests.storages.test_damage import copy_set, edit, transactions
from tests.support.served import env, serve

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def file_set(populated_sets: Callable[[str], Path]) -> Path:
    return populated_sets("file")


def crash_cut_copy(file_set: Path, tmp_path: Path, how: str) -> tuple[Path, bytes]:
    """A copy of the data set whose Data.fs ends in a cut transaction; and
    the bytes of the whole transactions before it."""
    data = copy_set(file_set, tmp_path / "data")
    whole = (data / "Data.fs").read_bytes()
    (data / "Data.fs").write_bytes(edit(whole, how))
    last, _ = transactions(whole)[-1]
    return data, whole[:last]


@pytest.mark.subprocess
@pytest.mark.parametrize("how", ["unfinished commit", "cut inside the data"])
def test_serve_recovers_a_crash_cut_only_with_recover(
    file_set: Path, tmp_path: Path, how: str
) -> None:
    data, kept = crash_cut_copy(file_set, tmp_path, how)
    cut = (data / "Data.fs").read_bytes()
    before = tree_digest(data)
    proc = vfab_bench(
        "serve", "--storage", "file", "--path", str(data), "--port", "0", timeout=60
    )
    assert_one_line(proc, "cut by a crash: transaction 4")
    assert tree_digest(data) == before

    with serve("--storage", "file", "--path", str(data), "--recover") as served:
        said = "".join(served.stderr)
    dropped = [ln for ln in said.splitlines() if "dropped transaction 4" in ln]
    assert len(dropped) == 1, said
    assert f"{len(cut) - len(kept)} bytes at byte {len(kept)}" in dropped[0]
    assert (data / "Data.fs.tr0").read_bytes() == cut[len(kept) :]
    assert (data / "Data.fs").read_bytes()[: len(kept)] == kept
    assert check_filestorage(data / "Data.fs") >= 3


@pytest.mark.subprocess
def test_populate_overwrite_recovers_only_with_recover(
    file_set: Path, tmp_path: Path
) -> None:
    data, _ = crash_cut_copy(file_set, tmp_path, "unfinished commit")
    before = tree_digest(data)
    args = ["populate", "--storage", "file", "--path", str(data), "--overwrite"]
    assert_one_line(vfab_bench(*args, timeout=120), "cut by a crash")
    assert tree_digest(data) == before
    proc = vfab_bench(*args, "--recover", "-q", timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "dropped transaction 4" in proc.stderr
    assert (data / "Data.fs.tr0").is_file()


@pytest.mark.subprocess
@pytest.mark.parametrize("how", ["garbage pickle", "bad length", "tid reduction"])
def test_recover_still_refuses_other_damage(
    file_set: Path, tmp_path: Path, how: str
) -> None:
    data = copy_set(file_set, tmp_path / "data")
    (data / "Data.fs").write_bytes(edit((data / "Data.fs").read_bytes(), how))
    before = tree_digest(data)
    for args in (
        ["serve", "--storage", "file", "--path", str(data), "--port", "0"],
        ["populate", "--storage", "file", "--path", str(data), "--overwrite"],
    ):
        proc = vfab_bench(*args, "--recover", timeout=120)
        assert_one_line(proc, "damaged")
        assert tree_digest(data) == before, args


def test_a_middle_transaction_with_a_checkpoint_flag_is_damage(
    file_set: Path, tmp_path: Path
) -> None:
    """Status 'c' is a crash's mark only on the last transaction."""
    data = copy_set(file_set, tmp_path / "data")
    blob = bytearray((data / "Data.fs").read_bytes())
    second, _ = transactions(bytes(blob))[1]
    blob[second + 16] = ord("c")
    (data / "Data.fs").write_bytes(bytes(blob))
    with pytest.raises(Exception) as e:
        check_filestorage(data / "Data.fs")
    assert not isinstance(e.value, CrashCutStorage)
    assert "never finished" in str(e.value)


# -- the acceptance case: runzeo killed in the middle of a commit -------------


class Witness(threading.Thread):
    """A ZEO client committing one small transaction after another beside the
    load, keeping the number of every commit the server acknowledged (its
    tpc_finish returned); stops at the first failure (the server gone)."""

    def __init__(self, address: tuple[str, int]) -> None:
        super().__init__(daemon=True)
        self.address = address
        self.acked: list[int] = []
        self.ended = threading.Event()

    def run(self) -> None:
        import transaction
        import ZEO
        from BTrees.IIBTree import IIBTree

        db = ZEO.DB(self.address, wait_timeout=5)
        try:
            tm = transaction.TransactionManager()
            conn = db.open(tm)
            root = conn.root()
            with tm:
                root["witness"] = IIBTree()
            self.acked.append(0)
            i = 0
            while True:
                i += 1
                tm.begin()
                root["witness"][i] = i
                tm.commit()
                self.acked.append(i)
        except Exception:  # noqa: BLE001 - the server was killed: the end
            pass
        finally:
            self.ended.set()
            try:
                db.close()
            except Exception:  # noqa: BLE001, S110 - closing a dead client
                pass


def cut_by_crash(path: Path) -> bool:
    try:
        check_filestorage(path)
    except CrashCutStorage:
        return True
    return False


@pytest.mark.subprocess
def test_runzeo_killed_under_load_is_recovered_with_every_acknowledged_commit(
    file_set: Path, tmp_path: Path
) -> None:
    data = copy_set(file_set, tmp_path / "data")
    before_pids = runzeo_pids()
    server = subprocess.Popen(
        [sys.executable, "-m", "scenarios.cli", "serve", "--port", "0"]
        + ["--storage", "file", "--path", str(data)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env(),
        cwd=ROOT,
    )
    load = witness = None
    try:
        assert server.stdout is not None
        address = ""
        for line in server.stdout:
            if line.startswith("serving "):
                address = line.split()[-1]
                break
        assert address, server.stderr.read() if server.stderr else ""
        (runzeo,) = runzeo_pids() - before_pids
        load = subprocess.Popen(
            [sys.executable, "-m", "scenarios.cli", "zeoloop", "--target", address]
            + ["--users", "4", "--processes", "2", "--duration", "120"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env(),
            cwd=ROOT,
        )
        host, _, port = address.rpartition(":")
        witness = Witness((host, int(port)))
        witness.start()
        time.sleep(3)  # the load and the witness under way
        # Freeze runzeo at random moments until it is caught inside a
        # commit (the last transaction on disk still 'c' or cut), then kill.
        fs = data / "Data.fs"
        rng = random.Random(21)
        for _attempt in range(2000):
            os.kill(runzeo, signal.SIGSTOP)
            if cut_by_crash(fs):
                os.kill(runzeo, signal.SIGKILL)
                break
            os.kill(runzeo, signal.SIGCONT)
            time.sleep(rng.uniform(0.0005, 0.01))
        else:
            os.kill(runzeo, signal.SIGKILL)
            pytest.fail("runzeo was never caught inside a commit in 2000 tries")
        assert witness.ended.wait(60)
        assert server.wait(60) == 1  # "runzeo exited unexpectedly"
    finally:
        for process in (load, server):
            if process is not None and process.poll() is None:
                process.send_signal(signal.SIGINT)
                try:
                    process.wait(60)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        for pid in runzeo_pids() - before_pids:
            os.kill(pid, signal.SIGKILL)
    acked = list(witness.acked)
    assert len(acked) > 1

    left = fs.read_bytes()
    listing = sorted(p.name for p in data.iterdir())
    proc = vfab_bench(
        "serve", "--storage", "file", "--path", str(data), "--port", "0", timeout=60
    )
    assert_one_line(proc, "cut by a crash")
    assert fs.read_bytes() == left
    assert sorted(p.name for p in data.iterdir()) == listing

    with serve("--storage", "file", "--path", str(data), "--recover") as served:
        import ZEO

        db = ZEO.DB(served.host_port)
        try:
            stored = dict(db.open().root()["witness"])
        finally:
            db.close()
    assert any("dropped transaction" in ln for ln in served.stderr), served.stderr
    missing = [i for i in acked if i != 0 and stored.get(i) != i]
    assert not missing, f"acknowledged commits lost: {missing[:10]}"
    assert (data / "Data.fs.tr0").is_file()
    assert left.startswith(fs.read_bytes())
    shutil.rmtree(data)


# -- Berkeley DB: a crash leaves work for its recovery -------------------------

#: Opens the BDBStorage environment argv[1] through ZODB and commits one
#: small transaction after another, printing the number of each once commit
#: returned, until it is killed.
BDB_WRITER = """
import sys
import transaction
import ZODB
from BTrees.IIBTree import IIBTree
from storages.bdb.storage import BDBStorage

db = ZODB.DB(BDBStorage(sys.argv[1]))
conn = db.open()
root = conn.root()
root["witness"] = IIBTree()
transaction.commit()
i = 0
while True:
    i += 1
    root["witness"][i] = i
    transaction.commit()
    print(i, flush=True)
"""


@pytest.fixture
def bdb_set(populated_sets: Callable[[str], Path]) -> Path:
    from storages.bdb import berkeleydb_missing

    reason = berkeleydb_missing()
    if reason:
        pytest.skip(reason)
    return populated_sets("bdb")


def crashed_bdb(
    bdb_set: Path, tmp_path: Path, commits: int = 50
) -> tuple[Path, list[int]]:
    """A copy of the data set whose environment a writer left by SIGKILL
    after *commits* acknowledged commits; and those commits."""
    data = tmp_path / "data"
    shutil.copytree(bdb_set, data)
    writer = subprocess.Popen(
        [sys.executable, "-c", BDB_WRITER, str(data / "bdb")],
        stdout=subprocess.PIPE,
        text=True,
        env=env(),
        cwd=ROOT,
    )
    acked = []
    assert writer.stdout is not None
    for line in writer.stdout:
        acked.append(int(line))
        if len(acked) == commits:
            writer.kill()
            break
    writer.wait()
    return data, acked


@pytest.mark.subprocess
def test_bdb_work_left_by_a_crash_is_named_and_recovered_only_with_recover(
    bdb_set: Path, tmp_path: Path
) -> None:
    data, acked = crashed_bdb(bdb_set, tmp_path)
    before = tree_digest(data)
    listing = sorted(p.name for p in (data / "bdb").iterdir())
    for args in (
        ["serve", "--storage", "bdb", "--path", str(data), "--port", "0"],
        ["populate", "--storage", "bdb", "--path", str(data), "--overwrite"],
        ["census", "--path", str(data)],
    ):
        proc = vfab_bench(*args, timeout=120)
        assert_one_line(proc, "a crash left work for Berkeley DB's recovery")
        assert "--recover" in proc.stderr
        assert tree_digest(data) == before, args
        assert sorted(p.name for p in (data / "bdb").iterdir()) == listing

    with serve("--storage", "bdb", "--path", str(data), "--recover") as served:
        import ZEO

        db = ZEO.DB(served.host_port)
        try:
            stored = dict(db.open().root()["witness"])
        finally:
            db.close()
    said = "".join(served.stderr)
    assert "ran Berkeley DB's recovery" in said, said
    assert [i for i in acked if stored.get(i) != i] == []
    # Recovered: served again without --recover.
    with serve("--storage", "bdb", "--path", str(data)) as served:
        assert "recovery" not in "".join(served.stderr)
