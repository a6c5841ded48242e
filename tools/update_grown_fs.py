"""Does a grown Data.fs slow FileStorage's update (docs/matrix.md: file's
update was 0.65x zodbshootout's)?  The matrix's update of 10 objects
(begin, set an attribute on each, commit; an explicit transaction
manager; one connection) on a fresh FileStorage and on one grown first by
N add transactions of 10 new objects, as zodbshootout's add grows its file
before its update runs.  Blocks of 50 transactions alternate between the
two; µs per object.

    .venv/bin/python tools/update_grown_fs.py [N, default 20000]
"""

import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import transaction
import ZODB
from persistent.mapping import PersistentMapping
from ZODB.FileStorage import FileStorage

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from scenarios.matrix.objects import PObject, payload  # noqa: E402


def make(path: Path, grow: int) -> tuple:
    db = ZODB.DB(FileStorage(str(path)))
    tm = transaction.TransactionManager(explicit=True)
    conn = db.open(tm)
    tm.begin()
    conn.root()["m"] = PersistentMapping({k: PObject(payload(0, k)) for k in range(10)})
    conn.root()["junk"] = PersistentMapping()
    tm.commit()
    for i in range(grow):
        tm.begin()
        conn.root()["junk"].update({k: PObject(payload(i, k)) for k in range(10)})
        tm.commit()
    return db, tm, conn


def block(tm, conn, n: int = 50) -> list[float]:
    out = []
    m = conn.root()["m"]
    for s in range(n):
        t0 = time.perf_counter()
        tm.begin()
        for obj in m.values():
            obj.attr = s
        tm.commit()
        out.append((time.perf_counter() - t0) / 10 * 1e6)
    return out


def main() -> None:
    grow = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    work = Path(tempfile.mkdtemp(prefix="vfab-update-grown-"))
    try:
        run(work, grow)
    finally:
        shutil.rmtree(work)


def run(work: Path, grow: int) -> None:
    a = make(work / "fresh.fs", 0)
    b = make(work / "grown.fs", grow)
    print(
        "sizes MB:",
        round(os.path.getsize(work / "fresh.fs") / 1e6, 1),
        round(os.path.getsize(work / "grown.fs") / 1e6, 1),
    )
    res: dict[str, list[float]] = {"fresh": [], "grown": []}
    for _ in range(12):
        res["fresh"] += block(a[1], a[2])
        res["grown"] += block(b[1], b[2])
    for k, v in res.items():
        v.sort()
        n = len(v)
        print(
            f"{k}: n={n} min {v[0]:.1f} p25 {v[n // 4]:.1f} "
            f"median {statistics.median(v):.1f} p75 {v[3 * n // 4]:.1f} µs/object"
        )
    for db, _tm, conn in (a, b):
        conn.close()
        db.close()


if __name__ == "__main__":
    main()
