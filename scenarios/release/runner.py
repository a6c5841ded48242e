"""Running a release's parts in order (the 2000 table, the counts, the
micro-benchmarks, the concurrency curve, the million run), each announced
on stderr as it starts and when it ends: its time, and the whole
release's ETA, in a CI log as on a terminal (issue 36).  make.py checks the
inputs first and judges after; the parts themselves are parts.py.

The ETA is the parts left's estimates (ReleasePlan.estimates: measured on
an idle two-core machine), scaled by how the parts done so far compared
with theirs: a busy or slower machine shows a later ETA after the first
part.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path

from scenarios.progress import Progress, duration, machine_now
from scenarios.release import parts
from scenarios.release.parts import PartResult
from scenarios.release.plan import ReleasePlan

#: A part's progress, named for the part: (what, whether it ticks).
ProgressFactory = Callable[[str, bool], Progress]

#: How far the scale of the parts done may move the ETA (a part that
#: failed at once says little about the next).
SCALE_BOUNDS = (0.5, 4.0)


@dataclasses.dataclass
class _Part:
    """One part to run: *name* as in PartResult, *run* its body given its
    progress (None: not run, with *skipped* as the reason)."""

    name: str
    title: str
    estimate_s: float
    run: Callable[[Progress], PartResult] | None
    skipped: str = ""
    tick: bool = True


def _parts(plan: ReleasePlan, out: Path, force: bool) -> list[_Part]:
    est = plan.estimates()
    table, counts = plan.table, plan.counts
    scale, million = plan.scale, plan.million
    return [
        _Part(
            "table",
            "The 2000 table",
            est["table"],
            lambda p: parts.run_table("table", "The 2000 table", table, out, force, p),
            tick=False,
        ),
        _Part(
            "counts",
            "Counts: instructions and I/O calls (the gate)",
            est["counts"],
            None
            if counts is None
            else (lambda p: parts.run_counts(counts, out, force, p)),
            plan.skipped.get("counts", ""),
        ),
        _Part(
            "micro",
            "Micro-benchmarks (pytest-benchmark)",
            est["micro"],
            lambda p: parts.run_micro(plan.micro, out, force, p),
        ),
        _Part(
            "scale",
            "Concurrency curve and consistency check (scale)",
            est["scale"],
            None
            if scale is None
            else (lambda p: parts.run_scale(scale, table.options, out, force, p)),
            plan.skipped.get("scale", ""),
        ),
        _Part(
            "million",
            "A million objects (run)",
            est["million"],
            None
            if million is None
            else (
                lambda p: parts.run_table(
                    "million", "A million objects (run)", million, out, force, p
                )
            ),
            plan.skipped.get("million", ""),
        ),
    ]


def run(
    plan: ReleasePlan,
    out: Path,
    force: bool,
    say: Callable[[str], None],
    progress: ProgressFactory,
    clock: Callable[[], float] = time.monotonic,
) -> list[PartResult]:
    """Every part of *plan* into *out*, in order; their results.  *say*
    prints a line (the release's own); *progress* makes each part's."""
    todo = _parts(plan, out, force)
    to_run = [p for p in todo if p.run is not None]
    results: list[PartResult] = []
    done_est = done_s = 0.0
    # Before a part has ended, the estimates (an idle machine's) scale with
    # this machine's speed and load now; then with what the parts took.
    prior = 1.0
    if clock is time.monotonic:
        machine = machine_now()
        prior = machine.factor
        if abs(prior - 1.0) > 0.2:
            say(f"release: estimates at {machine.words()}")
    for part in todo:
        if part.run is None:
            results.append(
                PartResult(part.name, part.title, "not run", detail=part.skipped)
            )
            continue
        index = to_run.index(part) + 1
        left = sum(p.estimate_s for p in to_run[index - 1 :])
        scale = _scale(done_s, done_est) if done_est > 0 else prior
        say(
            f"release: {part.name} ({index} of {len(to_run)}) starts: about "
            f"{duration(part.estimate_s * scale)}; the release's ETA "
            f"{duration(left * scale)}"
        )
        started = clock()
        with progress(f"release: {part.name}", part.tick) as shown:
            result = part.run(shown)
        took = clock() - started
        results.append(result)
        done_s += took
        done_est += part.estimate_s
        rest = left - part.estimate_s
        status = "" if result.status == "ok" else f", {result.status}"
        tail = (
            f"the release's ETA {duration(rest * _scale(done_s, done_est))}"
            if rest > 0
            else f"the release took {duration(done_s)}"
        )
        say(f"release: {part.name} ended in {duration(took)}{status}; {tail}")
    return results


def _scale(done_s: float, done_est: float) -> float:
    """How the parts done so far took against their estimates, bounded."""
    if done_est <= 0 or done_s <= 0:
        return 1.0
    low, high = SCALE_BOUNDS
    return min(high, max(low, done_s / done_est))
