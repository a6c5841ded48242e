"""choose's verdict: the candidates ranked, one line of reasons each, then
the conditions under which the ranking changes, in words a deployer acts
on.  A storage found WRONG (a known upstream bug included) is never
recommended; figures whose intervals (scale's sub-windows, bootstrap
95%) overlap are said to tie; a busy machine is said, with how wide it
left the intervals."""

from __future__ import annotations

import dataclasses
import statistics

from scenarios.choose.model import Candidate, ChooseRun, ReadPoint
from scenarios.clients import histogram
from scenarios.results import environment, significance
from scenarios.results.formatter import plural, size
from scenarios.scale.model import ScalePoint
from scenarios.scale.report import WINDOW_STATISTIC, latency
from scenarios.verify.runner import RIGHT, WRONG


@dataclasses.dataclass(frozen=True)
class Figure:
    """A throughput and its interval (low == high: none known)."""

    value: float
    low: float
    high: float

    def ties(self, other: Figure) -> bool:
        return self.low <= other.high and other.low <= self.high


def throughput(p: ScalePoint) -> Figure:
    windows = p.window_ops_per_s()
    if len(windows) < 2:
        return Figure(p.ops_per_s, p.ops_per_s, p.ops_per_s)
    iv = significance.interval(windows, WINDOW_STATISTIC)
    return Figure(p.ops_per_s, min(iv.low, p.ops_per_s), max(iv.high, p.ops_per_s))


def _reads(c: Candidate, clients: int) -> ReadPoint | None:
    if c.copy is None:
        return None
    warm = [r for r in c.copy.reads if not r.cold and r.clients <= clients]
    return max(warm, key=lambda r: r.clients, default=None)


def figure_at(c: Candidate, clients: int) -> tuple[int, Figure] | None:
    """(clients measured, throughput) of *c* at the highest count it was
    measured at up to *clients*: ops/s of the mix, or warm loads/s of a
    --from run (one pass: no interval)."""
    if c.copy is not None and not c.points:
        r = _reads(c, clients)
        return (
            None
            if r is None
            else (r.clients, Figure(r.loads_per_s, r.loads_per_s, r.loads_per_s))
        )
    points = [p for p in c.points if p.clients <= clients]
    if not points:
        return None
    p = max(points, key=lambda p: p.clients)
    return p.clients, throughput(p)


def recommendable(c: Candidate) -> bool:
    return c.recommendable


def ranked(run: ChooseRun, clients: int) -> list[Candidate]:
    """The right candidates measured at *clients* (one-process ones at
    one client), best throughput first; the others after, as they came."""
    good = [c for c in run.candidates if recommendable(c) and _at(c, clients)]
    good.sort(key=lambda c: -_value(c, clients))
    return good


def _at(c: Candidate, clients: int) -> bool:
    found = figure_at(c, clients)
    return found is not None and found[0] == clients


def _value(c: Candidate, clients: int) -> float:
    found = figure_at(c, clients)
    return 0.0 if found is None else found[1].value


def top_clients(run: ChooseRun) -> int:
    counts = [p.clients for c in run.candidates for p in c.points]
    counts += [r.clients for c in run.candidates if c.copy for r in c.copy.reads]
    return max(counts, default=1)


def unit(c: Candidate) -> str:
    return "loads/s" if c.copy is not None and not c.points else "ops/s"


def _p99(c: Candidate, clients: int) -> str:
    if c.copy is not None and not c.points:
        r = _reads(c, clients)
        ms = histogram.summary_ms(histogram.merged([r.hist]))["p99"] if r else None
    else:
        points = [p for p in c.points if p.clients == clients]
        ms = points[0].summary()["p99_ms"] if points else None
    return "p99 -" if ms is None else f"p99 {latency(float(ms))}"


def good_line(c: Candidate, after: Candidate | None, clients: int) -> str:
    """ "zeo: 1.8x relstorage-pg's throughput at 16 clients (812 ops/s),
    p99 21 ms; 4.1 MB on disk; right"."""
    n, fig = figure_at(c, clients) or (clients, Figure(0, 0, 0))
    at = f"at {plural(n, 'client')}"
    head = f"{fig.value:,.1f} {unit(c)} {at}"
    if after is not None and (other := figure_at(after, clients)) is not None:
        if fig.ties(other[1]):
            head = f"ties {after.storage} {at} ({fig.value:,.1f} {unit(c)})"
        elif other[1].value > 0:
            ratio = fig.value / other[1].value
            head = (
                f"{ratio:.1f}x {after.storage}'s throughput {at} "
                f"({fig.value:,.1f} {unit(c)})"
            )
    parts = [head, _p99(c, n)]
    if c.copy is not None:
        parts.append(f"copied {c.copy.transactions_per_s:,.1f} transactions/s")
    parts.append(f"{size(c.size_bytes)} on disk")
    if c.one_process:
        parts.append("one process only")
    return f"{c.storage}: " + ", ".join(parts) + "; right"


def bad_line(c: Candidate) -> str:
    """A candidate never recommended, and why."""
    word, why = c.verdict()
    if word == WRONG and c.known_bug:
        bug = c.known_bug.removeprefix("known upstream bug: ")
        return (
            f"{c.storage}: WRONG with concurrent writers ({bug}): for one "
            "writer only; not recommended"
        )
    if word == WRONG:
        return f"{c.storage}: WRONG: {why}; not recommended"
    if word == RIGHT and c.known_bug:
        bug = c.known_bug.removeprefix("known upstream bug: ")
        return (
            f"{c.storage}: right in this run, but {bug}: it shows now and "
            "then with concurrent writers: for one writer only; not recommended"
        )
    return f"{c.storage}: {word}: {why}; not recommended"


def lines(run: ChooseRun) -> list[str]:
    """The verdict: the recommendation, each candidate's line (ranked),
    the conditions, the machine."""
    top = top_clients(run)
    order = ranked(run, top)
    shared = [c for c in order if not c.one_process]
    one = [c for c in ranked(run, 1) if c.one_process]
    out = [recommendation(run, shared, one, top)]
    for i, c in enumerate(shared):
        out.append(
            "  " + good_line(c, shared[i + 1] if i + 1 < len(shared) else None, top)
        )
    for c in one:
        out.append("  " + good_line(c, None, 1))
    for c in run.candidates:
        if not recommendable(c):
            out.append("  " + bad_line(c))
    out += conditions(run, top)
    out += machine_lines(run)
    return out


def recommendation(
    run: ChooseRun, shared: list[Candidate], one: list[Candidate], top: int
) -> str:
    if not shared and not one:
        return (
            "choose: none recommended (each candidate WRONG, not fully "
            "checked, or with a known upstream bug: below)"
        )
    if not shared:
        return (
            f"choose: {one[0].storage} for one process (no shared storage stayed right)"
        )
    best = shared[0]
    tied = [
        c.storage
        for c in shared[1:]
        if (a := figure_at(best, top)) and (b := figure_at(c, top)) and a[1].ties(b[1])
    ]
    also = f" (ties {', '.join(tied)}: choose on the other lines)" if tied else ""
    return f"choose: {best.storage} for up to {plural(top, 'client')}{also}"


def conditions(run: ChooseRun, top: int) -> list[str]:
    """Where the ranking's head differs from the one at *top* clients:
    another storage wins ("at 1 client file wins (one process only)"),
    or the first ties with others there."""
    counts = sorted(
        {p.clients for c in run.candidates for p in c.points}
        | {r.clients for c in run.candidates if c.copy for r in c.copy.reads}
    )
    best_top = ranked(run, top)
    if not best_top:
        return []
    winner = best_top[0].storage
    out = []
    for n in counts:
        order = ranked(run, n)
        if n == top or not order:
            continue
        first = order[0]
        only = " (one process only)" if first.one_process else ""
        tied = [c.storage for c in order[1:] if _ties_at(first, c, n)]
        if tied:
            out.append(
                f"at {plural(n, 'client')} {first.storage}{only} ties "
                + ", ".join(tied)
            )
        elif first.storage != winner:
            out.append(f"at {plural(n, 'client')} {first.storage} wins{only}")
    if not out:
        measured = ", ".join(map(str, counts))
        out.append(f"the ranking holds at every client count measured ({measured})")
    return ["when it changes:", *("  " + line for line in out)]


def _ties_at(a: Candidate, b: Candidate, n: int) -> bool:
    fa, fb = figure_at(a, n), figure_at(b, n)
    return bool(fa and fb and fa[1].ties(fb[1]))


def machine_lines(run: ChooseRun) -> list[str]:
    """The busy machine, said with the intervals' median half width."""
    busy = environment.busy_summary(run.metadata)
    widths = []
    for c in run.candidates:
        for p in c.points:
            f = throughput(p)
            if f.value and f.high > f.low:
                widths.append((f.high - f.low) / 2 / f.value)
    if not widths:
        what = "no interval to say how much (one pass each)"
        if busy:
            return [f"warning: {busy}: figures slower and noisier than idle; {what}"]
        return [f"note: {what}: no two figures are said to tie"]
    width = f"throughput intervals ±{statistics.median(widths) * 100:.0f}% (median)"
    if busy:
        return [f"warning: {busy}: {width}, wider than idle; more figures tie"]
    return [f"note: {width}"]
