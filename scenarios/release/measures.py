"""What the release verdict compares beyond the suite's comparisons of
files: each storage's consistency state (right, WRONG, not fully checked)
across a release's points, and the million run's time and size per object
(one trial a side: ratios, no test); and whether the timed parts can be
compared at all (the same machine, neither release run busy)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, ClassVar

from scenarios.bench.report import cost_per_object
from scenarios.checker import known_bugs
from scenarios.checker.known_bugs import known_bug
from scenarios.release.model import Release
from scenarios.results import environment, formatter
from scenarios.results.formatter import plural
from scenarios.scale.model import ScaleRun
from vfab.codec import Derived

#: Severity of a verdict line (as scenarios.release.verdict): the gate
#: failed, a change worth reading, nothing to see.
GATE, CHANGE, QUIET = 2, 1, 0


@dataclasses.dataclass(frozen=True)
class Line:
    """One part's verdict in one line."""

    part: str
    text: str
    severity: int = QUIET

    def __str__(self) -> str:
        return f"{self.part}: {self.text}"


#: How many cells a line names before "and N more".
NAMED = 4


def tally(
    head: str,
    slower: Sequence[tuple[str, str]],
    faster: Sequence[tuple[str, str]],
    quiet: int,
    unsure: str = "",
) -> Line:
    """A timed part's line: how many cells moved each way, then the first
    NAMED of them ((name, words) each)."""
    text = (
        f"{head}: {len(slower)} slower, {len(faster)} faster (significant), "
        f"{quiet} not significant"
    )
    if unsure:
        text += f", {unsure}"
    named = [*slower, *faster][:NAMED]
    if named:
        text += "; " + "; ".join(f"{name}: {words}" for name, words in named)
    return Line("wall time", text, CHANGE if slower or faster else QUIET)


#: What the curve and the million run say when the machine was busy (the
#: wall time line says why).
SEE_WALL = "not comparable: a release ran on a busy machine (see wall time)"


def machine(meta: dict[str, Any]) -> tuple[Any, ...]:
    """What tells two machines apart: host name, CPU model and count."""
    host = meta.get("host") or {}
    env = meta.get("environment") or {}
    return (
        host.get("hostname"),
        env.get("cpu_model"),
        host.get("cpu_count") or meta.get("cpu_count"),
    )


def machine_words(meta: dict[str, Any]) -> str:
    name, model, cpus = machine(meta)
    return ", ".join(str(x) for x in (name, model, f"{cpus} CPUs") if x)


def timing_not_comparable(old: Release, new: Release) -> str | None:
    """Why the timed parts of *new* against *old* (wall time, the curve, the
    million run) say nothing of the code, or None: another machine, or
    either release ran while other work loaded the machine.  What this
    calls not comparable, no view calls significant: the verdict keeps no
    comparison of it, and trend marks no step."""
    if machine(old.metadata) != machine(new.metadata):
        return "not comparable: another machine (see below)"
    if old.busy_load is None and new.busy_load is None:
        return None
    loads = "; ".join(
        f"{r.path} ran at load {r.load:.1f}" for r in (old, new) if r.load is not None
    )
    cpus = new.metadata.get("cpu_count") or "?"
    return (
        f"not comparable: {loads} (on {cpus} CPUs; busy above "
        f"{environment.BUSY_LOAD_PER_CPU:g} a CPU): a busy machine slows "
        "every figure, so no cell is called faster or slower"
    )


# -- consistency ---------------------------------------------------------------


#: The state of a storage WRONG by a known upstream bug (not the gate): the
#: one policy of verify, release and release --against.
KNOWN_WRONG = known_bugs.KNOWN_WRONG


def states(run: ScaleRun | None) -> dict[str, tuple[str, str]]:
    """storage -> ("right" | "WRONG" | KNOWN_WRONG | "not fully checked",
    why): WRONG when any point found a violation (KNOWN_WRONG when a known
    upstream bug of the version the run recorded explains it), right when
    every point was checked."""
    out: dict[str, tuple[str, str]] = {}
    if run is None:
        return out
    every = run.every_point
    for storage in dict.fromkeys(p.storage for p in every):
        points = [p for p in every if p.storage == storage]
        wrong = [p for p in points if p.check.ok is False]
        # A point a lost host cut short was not fully checked, whatever its
        # check said of the part it saw.
        unchecked = [
            p for p in points if p.check.ok is None or p.incomplete is not None
        ]
        if wrong:
            p = wrong[0]
            why = f"{plural(p.clients, 'client')}: {p.check.summary}"
            bug = known_bug(storage, versions=run.metadata.get("versions", {}))
            # A known upstream bug shows now and then whatever the code
            # under test does: said, never the gate.
            out[storage] = (KNOWN_WRONG, f"{why}; {bug}") if bug else ("WRONG", why)
        elif unchecked:
            p = unchecked[0]
            said = p.incomplete or p.check.summary
            why = f"{plural(p.clients, 'client')}: {said}"
            out[storage] = ("not fully checked", why)
        else:
            out[storage] = ("right", f"every point checked ({len(points)})")
    return out


@dataclasses.dataclass(frozen=True)
class Consistency(Derived):
    old: dict[str, tuple[str, str]]
    new: dict[str, tuple[str, str]]

    def newly_wrong(self) -> list[str]:
        return [
            s
            for s, (state, _) in self.new.items()
            if state == "WRONG" and self.old.get(s, ("", ""))[0] != "WRONG"
        ]

    def lines(self) -> list[Line]:
        if not self.new:
            return [
                Line("consistency", "not checked in this release (no shared storage)")
            ]
        out = []
        for s in self.newly_wrong():
            was = self.old.get(s, ("not checked", ""))[0]
            out.append(
                Line(
                    "consistency",
                    f"NEW WRONG: {s} was {was} in the last release, WRONG now "
                    f"({self.new[s][1]})",
                    GATE,
                )
            )
        for s, (state, why) in self.new.items():
            was = self.old.get(s, ("not checked", ""))[0]
            if s in self.newly_wrong() or state == was == "right":
                continue
            if state == was:
                out.append(Line("consistency", f"{s} still {state} ({why})", CHANGE))
            else:
                out.append(
                    Line("consistency", f"{s} was {was}, now {state} ({why})", CHANGE)
                )
        if not out:
            names = ", ".join(self.new)
            out.append(
                Line(
                    "consistency",
                    f"right on every point ({names}), as in the last release",
                )
            )
        return out

    JSON_EXTRA: ClassVar[tuple[str, ...]] = ("newly_wrong",)


# -- million -------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class PerObject(Derived):
    """One storage of the million run: time and size per object built,
    old and new (None where unknown)."""

    storage: str
    time_per_object_s: tuple[float | None, float | None]
    size_per_object_bytes: tuple[float | None, float | None]

    JSON_EXTRA: ClassVar[tuple[str, ...]] = ("time_ratio", "size_ratio")

    @staticmethod
    def ratio(pair: tuple[float | None, float | None]) -> float | None:
        a, b = pair
        return b / a if a and b is not None else None

    @property
    def time_ratio(self) -> float | None:
        return self.ratio(self.time_per_object_s)

    @property
    def size_ratio(self) -> float | None:
        return self.ratio(self.size_per_object_bytes)

    def line(self, times: bool) -> str:
        parts = []
        if times:
            a, b = self.time_per_object_s
            parts.append(
                f"time per object {_us(a)} -> {_us(b)} "
                f"({formatter.ratio(self.time_ratio)})"
            )
        a, b = self.size_per_object_bytes
        parts.append(
            f"size per object {_bytes(a)} -> {_bytes(b)} "
            f"({formatter.ratio(self.size_ratio)})"
        )
        return f"{self.storage}: " + ", ".join(parts)


def _us(v: float | None) -> str:
    return "-" if v is None else formatter.duration(v)


def _bytes(v: float | None) -> str:
    return "-" if v is None else f"{v:.0f} B"


def per_object(old: Release, new: Release) -> list[PerObject]:
    a, b = old.million, new.million
    if a is None or b is None:
        return []
    out = []
    for storage in a.storages:
        if storage not in b.storages:
            continue
        times: list[float | None] = []
        sizes: list[float | None] = []
        for run in (a, b):
            size = run.sizes[0]
            times.append(cost_per_object(run, storage, size))
            trials = run.trials_of(storage, size)
            objects = trials[0].objects if trials else 0
            on_disk = trials[0].size_bytes if trials else None
            sizes.append(on_disk / objects if objects and on_disk is not None else None)
        out.append(PerObject(storage, (times[0], times[1]), (sizes[0], sizes[1])))
    return out
