"""tools/ab_patched_env.py: the environment it makes runs the patch where
asked and nowhere else, counted by calls (never by timing), at tiny size."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.tiers import starts

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "ab_patched_env.py"

pytestmark = pytest.mark.subprocess

#: 20 objects committed on a FileStorage: its records, and the patch's counts.
STORES = """
import json, tempfile, sys, transaction, ZODB
from persistent.mapping import PersistentMapping
from ZODB.FileStorage import FileStorage
db = ZODB.DB(FileStorage(tempfile.mkdtemp() + "/Data.fs"))
with db.transaction() as conn:
    for i in range(20):
        conn.root()[i] = PersistentMapping()
records = sum(len(list(t)) for t in db.storage.iterator())
db.close()
patch = sys.modules.get("vfab_ab_patch")
print(json.dumps({"records": records, "counts": patch and patch.counts,
                  "store": FileStorage.store.__qualname__}))
"""

#: Five commits through a ZEO server of this process, and the patch's counts.
ROUND_TRIPS = """
import json, sys, transaction, ZEO
from persistent.mapping import PersistentMapping
addr, stop = ZEO.server()
db = ZEO.DB(addr)
for i in range(5):
    with db.transaction() as conn:
        conn.root()[i] = PersistentMapping()
db.close()
stop()
patch = sys.modules.get("vfab_ab_patch")
print(json.dumps({"counts": patch and patch.counts}))
"""


def make(tmp_path: Path, *options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(TOOL), sys.prefix, str(tmp_path / "B"), *options],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip


def run(python: str, code: str) -> dict[str, object]:
    done = subprocess.run([python, "-c", code], capture_output=True, text=True,
                          timeout=300, cwd="/")  # fmt: skip
    assert done.returncode == 0, done.stderr
    out: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return out


@starts("subprocess")
def test_a_slower_store_in_b_only(tmp_path: Path) -> None:
    made = make(tmp_path, "--store-slower", "3")
    assert made.returncode == 0, made.stderr
    python = made.stdout.strip()
    assert python == str(tmp_path / "B" / "bin" / "python")
    patched = run(python, STORES)
    counts = patched["counts"]
    assert isinstance(counts, dict)
    # Every record stored went through the slowed store, each with a busy
    # wait; no reply delayed (not asked).
    assert counts["stores"] == patched["records"] >= 21
    assert counts["spins"] >= counts["stores"]
    assert counts["replies"] == 0
    assert patched["store"] == "slow_store.<locals>.store"
    # The environment it was made from is untouched.
    plain = run(sys.executable, STORES)
    assert plain["counts"] is None and plain["store"] == "FileStorage.store"
    # The report names it: a distribution saying what it does.
    code = "import importlib.metadata as m; print(m.version('vfab-ab-patch'))"
    version = subprocess.run([python, "-c", code], capture_output=True, text=True,
                             timeout=120, check=True).stdout.strip()  # fmt: skip
    assert version == "0+store3pct"


@starts("subprocess")
def test_a_slower_zeo_round_trip_in_b_only(tmp_path: Path) -> None:
    made = make(tmp_path, "--zeo-reply-delay", "1")
    assert made.returncode == 0, made.stderr
    counts = run(made.stdout.strip(), ROUND_TRIPS)["counts"]
    assert isinstance(counts, dict)
    # Each commit waits on at least two replies (vote, finish); stores untouched.
    assert counts["replies"] >= 2 * 5
    assert counts["stores"] == 0
    assert run(sys.executable, ROUND_TRIPS)["counts"] is None


@starts("subprocess")
def test_bad_input_is_one_line_and_makes_nothing(tmp_path: Path) -> None:
    for options, fragment in (
        ((), "give --store-slower PERCENT or --zeo-reply-delay MS"),
        (("--store-slower", "-3"), "give --store-slower"),
    ):
        done = make(tmp_path, *options)
        assert done.returncode == 2 and fragment in done.stderr, done.stderr
        assert len(done.stderr.splitlines()) == 1
        assert not (tmp_path / "B").exists()
    (tmp_path / "B").mkdir()
    done = make(tmp_path, "--store-slower", "3")
    assert done.returncode == 2 and "exists: name a new directory" in done.stderr
    assert list((tmp_path / "B").iterdir()) == []
    argv = [str(tmp_path), str(tmp_path / "C"), "--store-slower", "3"]
    done = subprocess.run([sys.executable, str(TOOL), *argv], capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert done.returncode == 2 and "is not a virtual environment" in done.stderr
