"""The scale run's tables and charts (SVG; --plot writes the same drawing):
a point's interval is the bootstrap interval of its sub-windows' median
(WINDOW_STATISTIC), shown as "±N%" and drawn as an error bar.
"""

from __future__ import annotations

from html import escape
from typing import Any

from scenarios.checker.check import Check
from scenarios.checker.words import said
from scenarios.clients import histogram
from scenarios.results import environment, formatter, significance, svg, table
from scenarios.results.formatter import plural
from scenarios.results.table import Table, wrapped
from scenarios.scale.model import OPERATION_NAMES, ScalePoint, ScaleRun

#: The statistic over a point's sub-windows (throughput and p99 move both
#: ways within a window: the median, not the minimum).
WINDOW_STATISTIC = "median"


def latency(ms: float) -> str:
    """A latency in ms as every view shows times: "4.75 ms", "812 µs"."""
    return formatter.duration(ms / 1000)


def ops_cell(p: ScalePoint) -> str:
    """ops/s of the window, and "±N%" from its sub-windows when it has them."""
    text = f"{p.ops_per_s:.1f}"
    values = p.window_ops_per_s()
    if len(values) < 2:
        return text
    iv = significance.interval(values, WINDOW_STATISTIC)
    rel = iv.relative_half_width
    return text if rel is None else f"{text} ±{rel * 100:.0f}%"


def _cpu(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def violations_cell(check: Check) -> str:
    """The consistency check's violation count, '-' when not checked."""
    if not check.checked:
        return "-"
    if check.violations is not None:
        return str(len(check.violations))
    # A file from before the history (format 2): only whether it held.
    return "0" if check.ok else "yes"


def points_table(points: list[ScalePoint], cores: int | None) -> Table:
    """One row per point: throughput, overall latency, conflicts, errors, CPU."""
    open_loop = any(p.rate is not None for p in points)
    header = ["storage", "clients", "ops/s", "commits/s"]
    if open_loop:
        header += ["offered/s", "backlog"]
    header += ["p50", "p95", "p99", "max", "conflicts", "retries"]
    header += ["failed", "errors", "violations", "client CPU s", "server CPU s"]
    header += ["CPU use"]
    rows = []
    for p in points:
        if p.incomplete is not None:
            # No figure: what the hosts left measured is not the point's.
            row = [p.storage, str(p.clients), "incomplete"]
            row += ["-"] * (len(header) - len(row))
            row[header.index("violations")] = violations_cell(p.check)
            rows.append(row)
            continue
        s = histogram.summary_ms(p.histogram())
        row = [
            p.storage,
            str(p.clients),
            ops_cell(p),
            f"{p.commits_per_s:.1f}",
        ]
        if open_loop:
            offered = "-" if p.rate is None else f"{p.rate:g}"
            mark = "" if p.honoured in (None, True) else " !"
            row += [offered + mark, str(p.backlog)]
        share = cpu_use(p, cores)
        use = "-" if share is None else f"{share * 100:.0f}%"
        row += [latency(s["p50"]), latency(s["p95"]), latency(s["p99"])]
        row += [latency(s["max"])]
        row += [str(p.conflicts), str(p.retries), str(p.failed)]
        row += [str(sum(p.errors.values())), violations_cell(p.check)]
        row += [_cpu(p.client_cpu_s)]
        row += [_cpu(p.server_cpu_s), use]
        rows.append(row)
    return Table("throughput and latency by client count", header, rows)


def operations_table(points: list[ScalePoint]) -> Table:
    """Per point and operation: count and p50/p95/p99/max."""
    header = ["storage", "clients", "operation", "ops", "p50", "p95", "p99", "max"]
    rows = []
    for p in points:
        for name in OPERATION_NAMES:
            s = histogram.summary_ms(p.histogram(name))
            if not s["count"]:
                continue
            rows.append(
                [p.storage, str(p.clients), name, str(s["count"])]
                + [latency(s[k]) for k in ("p50", "p95", "p99", "max")]
            )
    return Table("latency per operation", header, rows)


def tables(run: ScaleRun) -> list[Table]:
    points = list(run.every_point)
    return [points_table(points, run.cores), operations_table(points)]


def text(run: ScaleRun) -> str:
    parts = [t.text() for t in tables(run)]
    prose = ["\n".join(wrapped(n) for n in notes(run)), wrapped(LEGEND)]
    return "\n\n".join(parts + prose) + "\n"


def markdown(run: ScaleRun) -> str:
    return table.markdown(tables(run), ["# vfab-loadtest scale"], LEGEND)


#: More clients that raise the throughput by less than this fraction: the
#: curve has saturated.
SATURATION_GAIN = 0.10
#: CPU use (client + server, of every core) at which the machine, not the
#: storage, may be what limits the curve.
BUSY_CPU = 0.9


def cpu_use(p: ScalePoint, cores: int | None) -> float | None:
    """The share of the cores the point's clients and server used."""
    on = p.cores or cores
    if not on or not p.window_s:
        return None
    return (p.client_cpu_s + (p.server_cpu_s or 0.0)) / (p.window_s * on)


def curve_line(storage: str, points: list[ScalePoint], cores: int | None) -> str:
    """One storage's curve in a line: its peak, where it saturates (the
    first client count after which more clients add under 10%), and
    whether the machine's CPU was the limit there."""
    pts = sorted(
        (p for p in points if p.storage == storage and p.incomplete is None),
        key=lambda p: p.clients,
    )
    if not pts:
        return f"{storage}: no complete point"
    peak = max(pts, key=lambda p: p.ops_per_s)
    line = (
        f"{storage}: peak {peak.ops_per_s:,.1f} ops/s at "
        f"{plural(peak.clients, 'client')}"
    )
    if len(pts) == 1:
        return line + " (one point: no curve)"
    knee = next(
        (
            a
            for a, b in zip(pts, pts[1:], strict=False)
            if b.ops_per_s < a.ops_per_s * (1 + SATURATION_GAIN)
        ),
        None,
    )
    if knee is None:
        return line + f"; still rising at {plural(pts[-1].clients, 'client')}"
    line += (
        f"; saturates at {plural(knee.clients, 'client')} (more add under "
        f"{SATURATION_GAIN:.0%})"
    )
    use = cpu_use(knee, cores)
    if use is not None and use >= BUSY_CPU:
        line += f", CPU {use:.0%} busy there: the machine may be the limit"
    return line


def notes(run: ScaleRun) -> list[str]:
    """What the tables do not say, a line each: each storage's curve,
    rates not honoured, errors, faults, the consistency check, the load
    average."""
    points = list(run.every_point)
    storages = list(dict.fromkeys(p.storage for p in points))
    lines = [curve_line(name, points, run.cores) for name in storages]
    for p in run.every_point:
        where = f"{p.storage}, {plural(p.clients, 'client')}"
        if p.rate is not None and not p.honoured:
            lines.append(
                f"{where}: offered {p.rate:g} ops/s not honoured: achieved "
                f"{p.ops_per_s:.1f}, backlog {p.backlog} (latest client "
                f"{p.late_s:.2f} s behind)"
            )
        if p.errors:
            kinds = ", ".join(f"{k} {n}" for k, n in sorted(p.errors.items()))
            lines.append(f"{where}: errors: {kinds}")
        if p.fault is not None:
            lines.append(f"{where}: {fault_line(p.fault)}")
        if p.incomplete is not None:
            lines.append(
                f"{where}: incomplete: {p.incomplete}; no figure is reported "
                "for it (the hosts left did not measure the point)"
            )
        if p.hosts:
            lines.append(f"{where}: served by {hosts_line(p.hosts)}")
        for note in p.notes:
            lines.append(f"{where}: {note}")
        if p.interrupted:
            lines.append(f"{where}: interrupted")
        lines.append(f"{where}: {said(p.check, p.storage)}")
        lines += [f"  {line}" for line in p.check.details()]
    lines += environment.lines(run.metadata)
    return lines


LEGEND = (
    "ops/s and commits/s: successful operations and commits per second of the "
    "window (± half the width of the 95% interval of the median over its "
    "sub-windows); latency from each operation's start (open loop: its arrival), "
    "retries included; retries: conflicting attempts retried; failed: retries "
    "ran out; violations: what the consistency check found in the data after "
    "the point (0: checked, none; -: not checked); CPU use: client + server "
    "CPU over the window and all cores "
    "(near 100%: the machine, not the storage, is the limit); "
    "'!': offered rate not honoured."
)


def hosts_line(hosts: tuple[dict[str, Any], ...]) -> str:
    """The hosts of a point in a few words: each worker's clients and
    processes and their CPU, and the coordinating host.  Workers of one
    host and address (several on one machine) are told apart by their
    process id."""
    parts = []
    seen = [(h.get("host"), h.get("address")) for h in hosts]
    for h in hosts:
        name = str(h.get("host", "?"))
        where = [str(h["address"])] if h.get("address") else []
        if seen.count((h.get("host"), h.get("address"))) > 1 and h.get("pid"):
            where.append(f"pid {h['pid']}")
        if where:
            name += f" ({', '.join(where)})"
        if h.get("role") == "master":
            parts.append(f"{name}, coordinating")
            continue
        clients, processes = int(h.get("clients", 0)), int(h.get("processes", 0))
        cpu = h.get("client_cpu_s")
        busy = h.get("cpu_busy_s")
        text = (
            f"{name}: {plural(clients, 'client')} in "
            f"{plural(processes, 'process', 'processes')}"
        )
        if isinstance(cpu, (int, float)):
            text += f", their CPU {cpu:.1f} s"
        if isinstance(busy, (int, float)):
            text += f", the host's {busy:.1f} s"
        parts.append(text)
    return "; ".join(parts)


def fault_line(fault: dict[str, object]) -> str:
    kind = fault["kind"]
    if fault.get("applied_at_s") is None:
        return f"{kind} not applied"
    out = [f"{kind} at {fault['applied_at_s']:.1f} s"]
    if fault.get("restarted_at_s") is not None:
        out.append(f"restarted at {fault['restarted_at_s']:.1f} s")
    if fault.get("outage_s") is not None:  # always, in a file the suite wrote
        out.append(f"no service for {fault['outage_s']:.2f} s")
    first = fault.get("first_commit_after_restart_s")
    if first is not None:
        out.append(f"first commit {first:.2f} s after the restart")
    elif fault.get("first_commit_after_fault_s") is None:
        out.append("no commit after the fault")
    for when in ("during", "after"):
        errors = fault.get(f"errors_{when}") or {}
        assert isinstance(errors, dict)
        if errors:
            kinds = ", ".join(f"{k} {n}" for k, n in sorted(errors.items()))
            out.append(f"errors {when}: {kinds}")
    return "; ".join(out)


def _marks(
    run: ScaleRun,
) -> tuple[dict[tuple[int, str], svg.Mark], dict[tuple[int, str], svg.Mark]]:
    """(throughput, p99) marks per (clients, storage): the window's value,
    the sub-windows' interval where the point has one."""
    ops: dict[tuple[int, str], svg.Mark] = {}
    p99s: dict[tuple[int, str], svg.Mark] = {}
    for p in run.points:  # the incomplete ones have no figure to draw
        s = p.summary(run.cores)
        where = f"{p.storage}, {plural(p.clients, 'client')}"
        for marks, value, windows, words in (
            (ops, float(s["ops_per_s"] or 0), p.window_ops_per_s(), "ops/s"),
            (p99s, float(s["p99_ms"] or 0), p.window_p99_ms(), "ms p99"),
        ):
            low = high = value
            if len(windows) >= 2:
                iv = significance.interval(windows, WINDOW_STATISTIC)
                low, high = min(iv.low, value), max(iv.high, value)
            shown = f"{value:.1f} ops/s" if words == "ops/s" else latency(value)
            note = f"{where}: {shown}"
            if high > low:
                note += f" (sub-windows {low:.1f} to {high:.1f} {words})"
            marks[(p.clients, p.storage)] = svg.Mark(value, low, high, note)
    return ops, p99s


def charts(run: ScaleRun, width: int = 500) -> list[tuple[str, str]]:
    """(caption, SVG) of throughput and of p99 against clients, a line per
    storage, each point's sub-window interval as an error bar."""
    from scenarios.results import htmlbase

    series = htmlbase.series(run.storages())
    clients = sorted({p.clients for p in run.points})
    ops, p99 = _marks(run)
    return [
        (
            f"operations per second against clients, {how_run(run)}",
            svg.line_chart(
                clients, series, ops, "clients (log scale)", "operations / s",
                width=width,
            ),
        ),
        (
            "p99 latency against clients",
            svg.line_chart(
                clients, series, p99, "clients (log scale)", "p99 latency (ms)",
                width=width,
            ),
        ),
    ]  # fmt: skip


def how_run(run: ScaleRun) -> str:
    """How the run's clients ran: "one process each", "threads, 50 per
    process", "greenlets, all of a point's in one process"."""
    config = run.metadata.get("config") or {}
    kind = config.get("concurrency") or "processes"
    if kind == "processes":
        return "one process each"
    per = config.get("clients_per_process")
    return f"{kind}, {per} per process" if per else f"{kind}, one process a host"


def svg_file(run: ScaleRun) -> str:
    """The two charts side by side as one standalone SVG file."""
    drawn = [chart for _, chart in charts(run)]
    return svg.side_by_side(drawn, title=f"vfab-bench scale: {escape(title(run))}")


def title(run: ScaleRun) -> str:
    cores = run.cores
    load = environment.of(run.metadata).get("load_average_start")
    return f"{cores} cores" + (f", load average {load[0]:.2f} before" if load else "")
