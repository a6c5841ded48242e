"""The fault report of a scale point, from its clients' timelines: the
outage, the first commit after the restart, and the errors before, during
and after the fault, by kind (definitions: docs/internals.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from scenarios.scale.config import Fault

Event = Sequence[Any]  # (end_s, intended_s, kind)

SUCCESS = ("ok", "commit")


def report(
    fault: Fault,
    events: Iterable[Event],
    window_s: float,
    applied_at: float | None,
    restarted_at: float | None,
) -> dict[str, Any]:
    """The fault's report; *applied_at* and *restarted_at* are when the
    fault and the restart actually happened (seconds into the window; None:
    they did not)."""
    out: dict[str, Any] = fault.to_json() | {
        "applied_at_s": applied_at,
        "restarted_at_s": restarted_at,
    }
    if applied_at is None:
        return out | {"outage_s": None, "first_commit_after_restart_s": None}
    ordered = sorted((float(e[0]), str(e[2])) for e in events)
    successes = [t for t, kind in ordered if kind in SUCCESS and t >= applied_at]
    gaps, last = [], applied_at
    for t in successes:
        gaps.append(t - last)
        last = t
    gaps.append(window_s - last)
    resumed_from = restarted_at if restarted_at is not None else applied_at
    first_commit = next(
        (t for t, kind in ordered if kind == "commit" and t >= resumed_from), None
    )
    during_end = first_commit if first_commit is not None else window_s
    before: dict[str, int] = {}
    during: dict[str, int] = {}
    after: dict[str, int] = {}
    for t, kind in ordered:
        if kind in SUCCESS:
            continue
        bucket = before if t < applied_at else during if t < during_end else after
        bucket[kind] = bucket.get(kind, 0) + 1
    return out | {
        "outage_s": round(max(gaps), 3),
        "first_commit_after_restart_s": (
            None
            if first_commit is None or restarted_at is None
            else round(first_commit - restarted_at, 3)
        ),
        "first_commit_after_fault_s": (
            None if first_commit is None else round(first_commit - applied_at, 3)
        ),
        "errors_before": before,
        "errors_during": during,
        "errors_after": after,
    }
