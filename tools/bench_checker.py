"""How long the consistency check's judgement takes, and how much memory,
on a synthetic history the size of a 10-minute, 16-client scale run.

    .venv/bin/python tools/bench_checker.py                 # 100,000 attempts
    .venv/bin/python tools/bench_checker.py --attempts 20000 --clients 4

The history is made by simulating a storage that keeps ZODB's promises
(snapshot isolation, first-committer-wins, commits visible when
acknowledged): clients start attempts one after another, each reads at the
last committed transaction when it begins and commits when it ends unless
a register it writes changed meanwhile.  The mix is scale's (lookups,
price changes, transfers, audits, new sequences) plus verify's pairs.  It
prints the time of judge() alone (the graph, the rules, the searches:
the reading of a database is not in it) and the peak memory of the
process.  The judgement must find nothing: it says so, and exits 1 if it
did.  No timed assert: the figures are for a person to compare with the
targets (under 10 s and 1 GB for 100,000 attempts).
"""

from __future__ import annotations

import argparse
import bisect
import heapq
import random
import resource
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scenarios.checker.judge import judge  # noqa: E402
from scenarios.checker.readback import FinalRead, Stored  # noqa: E402
from scenarios.checker.violations import Baseline  # noqa: E402
from scenarios.load.clock import Clock  # noqa: E402
from scenarios.load.history import Access, Event, Session  # noqa: E402

CAPABILITIES = 250
LABS = 15
MIX = (
    ("lookup", 10),
    ("change_price", 2),
    ("create_sequence", 2),
    ("transfer_wafers", 1),
    ("audit_stock", 1),
    ("compare_offers", 1),
    ("reprice_pair", 1),
)


class Simulated:
    """A storage keeping ZODB's promises, as a list of versions per
    register: (tid, revision, value, digest)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng  # the history's seed decides the tids too
        self.tid = 1 << 40
        self.versions: dict[Any, list[tuple[int, int, int, str]]] = {}
        for cid in range(1, CAPABILITIES + 1):
            self.versions["price", cid] = [(self.tid, 0, 10_000 + cid, f"c{cid}r0")]
        for n in range(LABS):
            self.versions["stock", f"lab{n}"] = [(self.tid, 0, 1000, f"l{n}r0")]
        self.base = self.tid

    def read(self, register: Any, snapshot: int) -> tuple[int, int, int, str]:
        versions = self.versions[register]
        k = bisect.bisect_right([v[0] for v in versions], snapshot) - 1
        return versions[k]

    def commit(
        self, writes: list[tuple[Any, int, int, str]], read_at: int
    ) -> int | None:
        for register, _, _, _ in writes:
            if register[0] != "sequence" and self.versions[register][-1][0] > read_at:
                return None  # first committer wins
        self.tid += 1 + self.rng.randrange(3)
        for register, rev, value, digest in writes:
            self.versions.setdefault(register, []).append(
                (self.tid, rev, value, digest)
            )
        return self.tid


def popular(rng: random.Random) -> int:
    return min(CAPABILITIES, int(rng.paretovariate(1.2)))


def simulate(attempts: int, clients: int, seed: int) -> tuple[list[Event], Simulated]:
    """*attempts* attempts of *clients* clients, each reading when it
    begins and committing when it ends, so that concurrent ones conflict."""
    rng = random.Random(seed)
    storage = Simulated(rng)
    ops = [name for name, weight in MIX for _ in range(weight)]
    counts = [0] * clients
    events: list[Event] = []
    # (time, order, client, the attempt begun: None until it begins)
    queue: list[tuple[float, int, int, Any]] = [
        (rng.uniform(0, 0.002), c, c, None) for c in range(clients)
    ]
    heapq.heapify(queue)
    order = clients
    while len(events) < attempts:
        at, _, c, begun = heapq.heappop(queue)
        order += 1
        if begun is None:
            begun = begin(storage, rng, rng.choice(ops), at)
            heapq.heappush(queue, (at + rng.uniform(0.0005, 0.004), order, c, begun))
            continue
        op, start, snapshot, reads, writes = begun
        counts[c] += 1
        tid = storage.commit(writes, snapshot) if writes else None
        outcome = "ok" if not writes or tid is not None else "failed"
        events.append(
            Event(
                client=f"c{c}",
                n=counts[c],
                op=op,
                outcome=outcome,
                error=None if outcome == "ok" else "ConflictError",
                tid=None if tid is None else f"{tid:016x}",
                reads=tuple(reads),
                writes=tuple(
                    Access(r[0], r[1], rev, value, digest)
                    for r, rev, value, digest in writes
                ),
                start=start,
                end=at,
                snapshot=f"{snapshot:016x}",
            )
        )
        heapq.heappush(queue, (at + rng.uniform(0, 0.0005), order, c, None))
    return events, storage


#: The share of attempts that read an older snapshot than the last
#: committed transaction (--stale: a broken storage, to time the search).
STALE = [0.0]


def begin(storage: Simulated, rng: random.Random, op: str, start: float) -> Any:
    """An attempt of *op* begun at *start*: what it read at the last
    committed transaction (or, with --stale, an older one it says is the
    last), and what it will write."""
    snapshot = storage.tid
    if STALE[0] and rng.random() < STALE[0]:
        snapshot = max(storage.base, snapshot - rng.randrange(1, 200))
    reads: list[Access] = []
    writes: list[tuple[Any, int, Any, str]] = []

    def price(cid: int) -> tuple[int, int]:
        _, rev, value, digest = storage.read(("price", cid), snapshot)
        reads.append(Access("price", cid, rev, value, digest))
        return rev, value

    if op in ("lookup", "change_price"):
        cid = popular(rng)
        rev, value = price(cid)
        if op == "change_price":
            new = value + rng.randrange(1, 100)
            writes.append((("price", cid), rev + 1, new, f"c{cid}r{rev + 1}v{new}"))
    elif op in ("compare_offers", "reprice_pair"):
        a = popular(rng)
        for cid in (a, a % CAPABILITIES + 1):
            rev, value = price(cid)
            if op == "reprice_pair":
                new = value + 1
                writes.append((("price", cid), rev + 1, new, f"c{cid}r{rev + 1}v{new}"))
    elif op == "create_sequence":
        sid = rng.randrange(1 << 24, 1 << 31)
        while ("sequence", sid) in storage.versions:
            sid = rng.randrange(1 << 24, 1 << 31)
        writes.append((("sequence", sid), 1, ("u", "g", 12), f"s{sid}"))
    else:
        labs = [f"lab{n}" for n in range(LABS)]
        if op == "transfer_wafers":
            labs = rng.sample(labs, 2)
        seen = []
        for name in labs:
            _, rev, value, digest = storage.read(("stock", name), snapshot)
            reads.append(Access("stock", name, rev, value, digest))
            seen.append((name, rev, value))
        if op == "audit_stock":
            reads.append(Access("stock total", "*", 0, sum(v for _, _, v in seen)))
        else:
            moved = rng.randrange(0, 25)
            for (name, rev, value), delta in zip(seen, (-moved, moved), strict=True):
                new = value + delta
                writes.append(
                    (("stock", name), rev + 1, new, f"{name}r{rev + 1}v{new}")
                )
    return op, start, snapshot, reads, writes


def final_of(storage: Simulated) -> tuple[Baseline, FinalRead]:
    registers = {}
    final = FinalRead(snapshot=f"{storage.tid:016x}")
    for register, versions in storage.versions.items():
        tid, rev, value, digest = versions[-1]
        if register[0] == "sequence":
            final.sequences[register[1]] = Stored(1, value, digest, f"{tid:016x}")
            continue
        _, rev0, value0, digest0 = versions[0]
        registers[register] = (rev0, value0, digest0)
        final.registers[register] = Stored(rev, value, digest, f"{tid:016x}")
    baseline = Baseline(registers, frozenset(), f"{storage.base:016x}", 0.0)
    return baseline, final


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--attempts", type=int, default=100_000)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--stale",
        type=float,
        default=0.0,
        metavar="SHARE",
        help="share of attempts that read a stale snapshot (a broken storage: "
        "the check must find it; 0: none)",
    )
    args = parser.parse_args()
    STALE[0] = args.stale
    made = time.perf_counter()
    events, storage = simulate(args.attempts, args.clients, args.seed)
    baseline, final = final_of(storage)
    sessions = {
        f"c{c}": Session(f"c{c}", Clock(0.0, 0.0, "x"), "Simulated", True, "simulated")
        for c in range(args.clients)
    }
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"history: {len(events):,} attempts of {args.clients} clients, "
        f"{sum(e.outcome == 'ok' for e in events):,} ok "
        f"(made in {time.perf_counter() - made:.1f} s); peak RSS so far {before:.0f} MB"
    )
    started = time.perf_counter()
    report = judge(events, baseline, final, sessions)
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"judge(): {seconds:.1f} s, peak RSS {peak:.0f} MB")
    print(report.summary())
    print(report.what())
    for line in report.lines():
        print(f"  {line}")
    return 0 if bool(report.ok) == (args.stale == 0) else 1


if __name__ == "__main__":
    raise SystemExit(main())
