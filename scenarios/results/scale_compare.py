"""Two scale files side by side, point by point (storage and client count):
throughput and p99 latency, OLD -> NEW, as ratios.

A scale point is one measured window, not repeated trials: there is nothing
to test a difference against, so no verdict says "significant" or "not
significant".  Each line gives the two values and their ratio; the heading
says why that is all, and that this machine's speed spells alone move a
point by up to 1.5-1.8x (docs/results.md, "Timing on this machine").  Files are
compared only when they ran the same load: the same scale, seed, mix,
window and offered rate.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from scenarios.results import formatter
from scenarios.results.compare import check_same
from scenarios.results.files import ResultsError
from scenarios.scale.results import ScaleRun

#: What two scale runs must share to be compared.
IDENTITY = ("scale", "seed", "weights", "skew", "duration_s", "rate")


@dataclasses.dataclass(frozen=True)
class PointComparison:
    storage: str
    clients: int
    old: dict[str, Any]
    new: dict[str, Any]

    def ratio(self, key: str) -> float | None:
        a, b = self.old.get(key), self.new.get(key)
        if not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
            return None
        return b / a if a > 0 else None

    def line(self) -> str:
        ops, p99 = self.ratio("ops_per_s"), self.ratio("p99_ms")
        ops_words = "-" if ops is None else f"{ops:.2f}x"
        p99_words = "-" if p99 is None else f"{p99:.2f}x"
        return (
            f"ops/s {self.old['ops_per_s']:.1f} -> {self.new['ops_per_s']:.1f} "
            f"({ops_words}); p99 {formatter.ms(self.old['p99_ms'])} -> "
            f"{formatter.ms(self.new['p99_ms'])} ms ({p99_words})"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "storage": self.storage,
            "clients": self.clients,
            "old": self.old,
            "new": self.new,
            "ops_ratio": self.ratio("ops_per_s"),
            "p99_ratio": self.ratio("p99_ms"),
        }


@dataclasses.dataclass(frozen=True)
class ScaleComparison:
    title: str
    points: tuple[PointComparison, ...]
    unmatched: tuple[str, ...] = ()

    def heading(self) -> str:
        return (
            f"{self.title}: throughput and p99 latency per storage and client "
            "count, new / old.  One measured window per point: no test of "
            "significance is possible; this machine's speed spells alone can move "
            "a point by up to 1.5-1.8x."
        )

    def text(self) -> str:
        parts = [self.heading()]
        for storage in dict.fromkeys(p.storage for p in self.points):
            rows = [p for p in self.points if p.storage == storage]
            lines = [f"{storage}:"]
            lines += [f"  {p.clients:>3} client(s)  {p.line()}" for p in rows]
            parts.append("\n".join(lines))
        if self.unmatched:
            parts.append("In one file only: " + "; ".join(self.unmatched))
        return "\n\n".join(parts) + "\n"

    def markdown(self) -> str:
        lines = [f"# {self.heading()}", "", "| storage | clients | ops/s | p99 ms |"]
        lines.append("|---|---:|---|---|")
        for p in self.points:
            lines.append(
                f"| {p.storage} | {p.clients} | {p.old['ops_per_s']:.1f} -> "
                f"{p.new['ops_per_s']:.1f} | {formatter.ms(p.old['p99_ms'])} -> "
                f"{formatter.ms(p.new['p99_ms'])} |"
            )
        return "\n".join(lines) + "\n"

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "scale",
            "title": self.title,
            "points": [p.to_json() for p in self.points],
            "unmatched": list(self.unmatched),
        }


def compare_scale(
    old: ScaleRun, new: ScaleRun, old_name: str = "OLD", new_name: str = "NEW"
) -> ScaleComparison:
    def identity(run: ScaleRun) -> dict[str, Any]:
        config = run.metadata.get("config") or {}
        return {key: config.get(key) for key in IDENTITY}

    check_same(
        identity(old), identity(new), old_name, new_name, "they ran different loads"
    )
    a = {(p.storage, p.clients): p.summary(old.cores) for p in old.points}
    b = {(p.storage, p.clients): p.summary(new.cores) for p in new.points}
    points = tuple(
        PointComparison(storage, clients, a[(storage, clients)], b[key])
        for key in a
        if key in b
        for storage, clients in [key]
    )
    if not points:
        raise ResultsError(f"{old_name} and {new_name} have no point in common")
    unmatched = tuple(
        f"{s} at {c} client(s) ({old_name if (s, c) in a else new_name})"
        for s, c in [*a, *(k for k in b if k not in a)]
        if ((s, c) in a) != ((s, c) in b)
    )
    return ScaleComparison(f"{old_name} -> {new_name}", points, unmatched)
