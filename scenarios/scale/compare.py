"""Two scale files point by point: throughput and p99, OLD -> NEW, as ratios,
tested sub-window against sub-window where both points kept them (files
of one load only; why a significant change may still be the machine's:
docs/internals.md).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, ClassVar

from scenarios.results import formatter, power, significance
from scenarios.results.compare import (
    Change,
    Comparison,
    check_same,
    one_side,
    paired,
)
from scenarios.results.formatter import plural
from scenarios.results.significance import Difference
from scenarios.scale.model import ScalePoint, ScaleRun
from scenarios.scale.report import WINDOW_STATISTIC, latency
from vfab.codec import Derived

#: What two scale runs must share to be compared.
IDENTITY = ("scale", "seed", "weights", "skew", "duration_s", "rate")

#: The two things compared per point: (summary key, what it is).
MEASURES = (("ops_per_s", "ops/s"), ("p99_ms", "p99"))


@dataclasses.dataclass(frozen=True)
class Measure(Change):
    """One measure (*name*) of one point (*column* the storage, *row* its
    clients), OLD -> NEW: the window's values, and the sub-windows' test
    where both points have them."""

    name: str
    old: float
    new: float
    difference: Difference | None = None
    #: How many tests the pair of files made (the adjustment's family).
    tests: int = 1

    JSON_SKIP = ("column", "row", "name", "difference", "tests")
    JSON_EXTRA = ("ratio", "verdict", "significant", "inconclusive", "test")

    @property
    def ratio(self) -> float | None:
        return self.new / self.old if self.old > 0 else None

    @property
    def windows(self) -> tuple[int, int]:
        d = self.difference
        return (0, 0) if d is None else (d.old.n, d.new.n)

    @property
    def inconclusive(self) -> bool:
        d = self.difference
        if d is None or d.significant:
            return False
        m, n = self.windows
        return not power.decidable(m, n, WINDOW_STATISTIC, self.tests)

    @property
    def significant(self) -> bool:
        return self.difference is not None and self.difference.significant

    @property
    def changed(self) -> bool:
        return self.significant or self.inconclusive

    @property
    def test(self) -> dict[str, object] | None:
        return None if self.difference is None else self.difference.to_json()

    @property
    def worse(self) -> bool:
        """A significant change for the worse: fewer ops/s, a higher p99."""
        r = self.ratio
        if not self.significant or r is None:
            return False
        return r < 1 if self.name == "ops/s" else r > 1

    @property
    def better(self) -> bool:
        r = self.ratio
        return self.significant and r is not None and not self.worse and r != 1

    def value(self, v: float) -> str:
        return f"{v:.1f}" if self.name == "ops/s" else latency(v)

    def values(self) -> tuple[str, str]:
        return self.value(self.old), self.value(self.new)

    @property
    def prefix(self) -> str:
        return f"{self.name} "

    def fields(self) -> tuple[str, ...]:
        return (self.name,)

    @property
    def verdict(self) -> str:
        r = self.ratio
        ratio = formatter.ratio(r)
        if self.difference is None:
            return f"{ratio} (no sub-windows: not tested)"
        if self.significant and r is not None:
            if self.name == "ops/s":
                words = "more ops/s" if r > 1 else "fewer ops/s"
            else:
                words = "higher" if r > 1 else "lower"
            return f"{ratio} ({formatter.change(r - 1)}): {words}, significant"
        if self.inconclusive:
            m, n = self.windows
            needed = power.trials_needed(WINDOW_STATISTIC, self.tests)
            more = "more than 60" if needed is None else f"at least {needed}"
            return f"{ratio}, inconclusive ({m} vs {n} sub-windows; {more} needed)"
        return f"{ratio}, not significant"


@dataclasses.dataclass(frozen=True)
class PointComparison(Derived):
    """One point of both files (*storage* at *clients*): each file's
    summary of it, and its measures."""

    storage: str
    clients: int
    old: dict[str, Any]
    new: dict[str, Any]
    measures: tuple[Measure, ...] = ()

    #: Its JSON (codec.derived): the measures last, by name.
    JSON_SKIP: ClassVar[tuple[str, ...]] = ("measures",)
    JSON_EXTRA: ClassVar[tuple[str, ...]] = ("ops_ratio", "p99_ratio", "measures")
    JSON_AS: ClassVar[dict[str, Callable[[Any], Any]]] = {
        "measures": lambda measures: {m.name: m.to_json() for m in measures}
    }

    def ratio(self, key: str) -> float | None:
        a, b = self.old.get(key), self.new.get(key)
        if not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
            return None
        return b / a if a > 0 else None

    @property
    def ops_ratio(self) -> float | None:
        return self.ratio("ops_per_s")

    @property
    def p99_ratio(self) -> float | None:
        return self.ratio("p99_ms")

    @property
    def where(self) -> str:
        return f"{self.storage}, {plural(self.clients, 'client')}"


@dataclasses.dataclass(frozen=True, kw_only=True)
class ScaleComparison(Comparison):
    """Every point both files have, a Measure per point and measure (the
    cells), the points with each file's summary of them."""

    cells: tuple[Measure, ...]
    points: tuple[PointComparison, ...]
    kind: str = "scale"

    HEADER = ("clients", "measure", "old", "new", "change")
    JSON_SKIP = ("cells", "warnings")

    @property
    def tested(self) -> bool:
        return any(m.difference is not None for m in self.cells)

    def worse(self) -> list[Measure]:
        return [m for m in self.cells if m.worse]

    def better(self) -> list[Measure]:
        return [m for m in self.cells if m.better]

    def heading(self) -> str:
        head = (
            f"{self.title}: throughput and p99 latency per storage and client "
            "count, new / old."
        )
        if not self.tested:
            return head + (
                "  One measured window per point: no test of significance is "
                "possible; this machine's speed spells alone can move a point "
                "by up to 1.5-1.8x."
            )
        return head + (
            f"  Tested sub-window against sub-window (permutation test of the "
            f"{WINDOW_STATISTIC}, false discovery rate {significance.ALPHA} "
            f"across the {len(self.cells)} tests); sub-windows of one "
            "window are not independent trials, and a slow spell of the "
            "machine longer than one moves several: a significant change may "
            "be the machine's."
        )

    def summary(self) -> str:
        """One line: how many measures changed for the worse or the better."""
        worse, better = self.worse(), self.better()
        line = (
            f"{len(self.cells)} measures ({len(self.points)} points): "
            f"{len(worse)} worse, {len(better)} better"
        )
        if worse:
            m = worse[0]
            line += f"; first: {m.column}, {m.row}, {m.line}"
        return line


def _windows(p: ScalePoint, key: str) -> list[float]:
    return p.window_ops_per_s() if key == "ops_per_s" else p.window_p99_ms()


def compare_scale(
    old: ScaleRun, new: ScaleRun, old_name: str = "OLD", new_name: str = "NEW"
) -> ScaleComparison:
    def identity(run: ScaleRun) -> dict[str, Any]:
        config = run.metadata.get("config") or {}
        return {key: config.get(key) for key in IDENTITY}

    check_same(
        identity(old), identity(new), old_name, new_name, "they ran different loads"
    )
    a = {(p.storage, p.clients): p for p in old.points}
    b = {(p.storage, p.clients): p for p in new.points}
    keys = [k for k, _, _ in paired(a, b, old_name, new_name, "point")]
    # Every test of the pair, adjusted together as compare adjusts cells.
    tests: list[tuple[tuple[str, int], str, Difference]] = []
    for key in keys:
        for name, _ in MEASURES:
            x, y = _windows(a[key], name), _windows(b[key], name)
            if len(x) >= 2 and len(y) >= 2:
                tests.append(
                    (key, name, significance.difference(x, y, WINDOW_STATISTIC))
                )
    adjusted = significance.adjust([d for _, _, d in tests]) if tests else []
    found = {(key, name): d for (key, name, _), d in zip(tests, adjusted, strict=True)}
    points = []
    for key in keys:
        s_old, s_new = a[key].summary(old.cores), b[key].summary(new.cores)
        measures = tuple(
            Measure(
                key[0],
                plural(key[1], "client"),
                label,
                float(s_old[name] or 0),
                float(s_new[name] or 0),
                found.get((key, name)),
                max(len(tests), 1),
            )
            for name, label in MEASURES
        )
        points.append(PointComparison(key[0], key[1], s_old, s_new, measures))
    unmatched = tuple(
        f"{s} at {plural(c, 'client')} ({old_name if in_old else new_name})"
        for (s, c), in_old in one_side(a, b)
    )
    return ScaleComparison(
        title=f"{old_name} -> {new_name}",
        cells=tuple(m for p in points for m in p.measures),
        points=tuple(points),
        unmatched=unmatched,
    )
