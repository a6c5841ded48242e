"""What made file's update 0.65x zodbshootout's (docs/matrix.md)?  The
matrix's update of 10 objects (begin, set an attribute on each, commit; an
explicit transaction manager; one connection) on FileStorage, in one
process, in variants that each change one thing:

- old: the matrix's payload before 2026-11-28 (240 bytes of a pattern);
- now: its payload since (1,420 bytes of letters and spaces);
- zodbshootout: zodbshootout's own objects (its "300 bytes": 1.2-1.6 kB
  of its source text), when its virtual environment is there
  (tools/shootout_side_by_side.py makes it);
- grown: old, on a Data.fs grown first by N add transactions of 10
  objects, as zodbshootout's add grows its file before its update runs;
- threaded: old, each block run in a thread of its own, as pyperf's
  worker runs zodbshootout's benchmark with --threads.

Blocks of 50 transactions alternate between the variants, 12 blocks
each; µs per object (min, quartiles, median).

    .venv/bin/python tools/update_gap.py [--grow N] [--venv DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import transaction
import ZODB
from persistent.mapping import PersistentMapping
from ZODB.FileStorage import FileStorage

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from scenarios.matrix.objects import PObject, payload  # noqa: E402

DEFAULT_VENV = Path.home() / ".cache" / "vfab-loadtest" / "shootout-venv"
OBJECTS = 10
BLOCK = 50
BLOCKS = 12


def old_payload(client: int, key: int) -> bytes:
    """The matrix's payload before 2026-11-28: 240 bytes of a pattern."""
    seed = f"{client}:{key}:".encode()
    return (seed * (240 // len(seed) + 1))[:240]


def shootout_objects(venv: Path) -> dict[int, Any] | None:
    """zodbshootout's 10 objects at its default size, or None without it."""
    found = sorted(venv.glob("lib/python*/site-packages/zodbshootout"))
    if not found:
        return None
    sys.path.append(str(found[0].parent))
    from zodbshootout.speedtest import SpeedTestData

    return SpeedTestData(1, OBJECTS, 300).data_to_store()


class Variant:
    def __init__(self, path: Path, objects: dict[int, Any], grow: int = 0) -> None:
        self.db = ZODB.DB(FileStorage(str(path)))
        self.tm = transaction.TransactionManager(explicit=True)
        self.conn = self.db.open(self.tm)
        self.times: list[float] = []
        self.tm.begin()
        root = self.conn.root()
        root["m"], root["junk"] = PersistentMapping(objects), PersistentMapping()
        self.tm.commit()
        for i in range(grow):
            self.tm.begin()
            root["junk"].update({k: PObject(old_payload(i, k)) for k in range(OBJECTS)})
            self.tm.commit()
        self.bytes = os.path.getsize(path)

    def block(self) -> None:
        m = self.conn.root()["m"]
        for stamp in range(BLOCK):
            t0 = time.perf_counter()
            self.tm.begin()
            for obj in m.values():
                obj.attr = stamp
            self.tm.commit()
            self.times.append((time.perf_counter() - t0) / OBJECTS * 1e6)

    def close(self) -> None:
        self.conn.close()
        self.db.close()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--grow", type=int, default=20_000, metavar="N")
    p.add_argument("--venv", type=Path, default=DEFAULT_VENV)
    args = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="vfab-update-gap-"))
    variants: dict[str, Variant] = {}
    try:
        old = {k: PObject(old_payload(0, k)) for k in range(OBJECTS)}
        variants["old"] = Variant(work / "old.fs", old)
        now = {k: PObject(payload(0, k)) for k in range(OBJECTS)}
        variants["now"] = Variant(work / "now.fs", now)
        theirs = shootout_objects(args.venv)
        if theirs is None:
            print(f"no zodbshootout in {args.venv}: that variant left out")
        else:
            variants["zodbshootout"] = Variant(work / "theirs.fs", theirs)
        grown = {k: PObject(old_payload(0, k)) for k in range(OBJECTS)}
        variants["grown"] = Variant(work / "grown.fs", grown, args.grow)
        threaded = {k: PObject(old_payload(0, k)) for k in range(OBJECTS)}
        variants["threaded"] = Variant(work / "threaded.fs", threaded)
        for _ in range(BLOCKS):
            for name, v in variants.items():
                if name == "threaded":
                    t = threading.Thread(target=v.block)
                    t.start()
                    t.join()
                else:
                    v.block()
        load = os.getloadavg()[0]
        print(f"{BLOCKS} blocks of {BLOCK} transactions each, load {load:.2f}")
        for name, v in variants.items():
            t = sorted(v.times)
            n = len(t)
            print(
                f"{name:13} min {t[0]:6.1f}  p25 {t[n // 4]:6.1f}  median "
                f"{statistics.median(t):6.1f}  p75 {t[3 * n // 4]:6.1f} µs/object"
                f"  ({v.bytes / 1e6:.1f} MB file)"
            )
    finally:
        for v in variants.values():
            v.close()
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
