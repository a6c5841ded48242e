"""What a full garbage collection just before the clock costs a cold read
(docs/matrix.md, "Side by side with zodbshootout 0.8").

One FileStorage holding zodbshootout's tree (root, a mapping, a size, a
client's mapping of N PObjects), read cold N objects at a time three
ways, interleaved, ROUNDS times each:

  full   the matrix's way before: one DB kept, its caches emptied then a
         full gc.collect(); the clock: open, walk, read
  young  the same with a young collection (gc.collect(1)): the matrix now
  new    zodbshootout's way: a new DB over the file per read (its root
         loaded by DB()), nothing collected; the clock: open, walk, read

    .venv/bin/python tools/cold_read_gc.py [N] [ROUNDS]    # 10 300

Prints each way's minimum and median per object.  Run it idle: the
ratios are the figure, the times are this machine's.
"""

from __future__ import annotations

import gc
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import transaction
from persistent.mapping import PersistentMapping
from ZODB import DB
from ZODB.FileStorage import FileStorage

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from scenarios.matrix.objects import PObject, payload  # noqa: E402


def build(path: Path, n: int) -> None:
    db = DB(FileStorage(str(path)))
    with db.transaction() as conn:
        top = conn.root()["m"] = PersistentMapping()
        top[n] = PersistentMapping()
        top[n][0] = PersistentMapping({k: PObject(payload(0, k), 1) for k in range(n)})
    db.close()


def timed_read(db: Any, n: int, tm: Any = None) -> float:
    t0 = time.perf_counter()
    conn = db.open(tm)
    values = [obj.attr for obj in conn.root()["m"][n][0].values()]
    elapsed = time.perf_counter() - t0
    assert len(values) == n
    conn.transaction_manager.abort()
    conn.close()
    return elapsed


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    where = Path(tempfile.mkdtemp(prefix="vfab-coldgc-"))
    try:
        build(where / "kept.fs", n)
        shutil.copy(where / "kept.fs", where / "new.fs")
        kept = DB(FileStorage(str(where / "kept.fs")))
        tm = transaction.TransactionManager()
        times: dict[str, list[float]] = {"full": [], "young": [], "new": []}
        for _ in range(rounds):
            for way, generation in (("full", 2), ("young", 1)):
                for conn in list(kept.pool.all):
                    conn.cacheMinimize()
                gc.collect(generation)
                times[way].append(timed_read(kept, n, tm))
            db = DB(FileStorage(str(where / "new.fs"), read_only=True))
            times["new"].append(timed_read(db, n))
            db.close()
        kept.close()
    finally:
        shutil.rmtree(where, ignore_errors=True)
    for way, values in times.items():
        print(
            f"{way:6s} min {min(values) / n * 1e6:6.1f} µs/object, "
            f"median {statistics.median(values) / n * 1e6:6.1f} ({rounds} reads)"
        )


if __name__ == "__main__":
    main()
