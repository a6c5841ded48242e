"""The scale run's tables (scenarios.results.table) and its plot."""

from __future__ import annotations

from pathlib import Path

from scenarios.results import formatter
from scenarios.results.table import Table
from scenarios.scale import hist
from scenarios.scale.results import OPERATION_NAMES, ScalePoint, ScaleRun


def _cpu(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def violations_cell(invariants: dict[str, object]) -> str:
    """The consistency check's violation count, '-' when not checked."""
    if not invariants.get("checked"):
        return "-"
    violations = invariants.get("violations")
    if isinstance(violations, list):
        return str(len(violations))
    # A file from before the history (format 2): only whether it held.
    return "0" if invariants.get("ok") else "yes"


def points_table(points: list[ScalePoint], cores: int | None) -> Table:
    """One row per point: throughput, overall latency, conflicts, errors, CPU."""
    open_loop = any(p.rate is not None for p in points)
    header = ["storage", "clients", "ops/s", "commits/s"]
    if open_loop:
        header += ["offered/s", "backlog"]
    header += ["p50 ms", "p95 ms", "p99 ms", "max ms", "conflicts", "retries"]
    header += ["failed", "errors", "violations", "client CPU s", "server CPU s"]
    header += ["CPU use"]
    rows = []
    for p in points:
        s = hist.summary_ms(p.histogram())
        row = [
            p.storage,
            str(p.clients),
            f"{p.ops_per_s:.1f}",
            f"{p.commits_per_s:.1f}",
        ]
        if open_loop:
            offered = "-" if p.rate is None else f"{p.rate:g}"
            mark = "" if p.honoured in (None, True) else " !"
            row += [offered + mark, str(p.backlog)]
        cpu = p.client_cpu_s + (p.server_cpu_s or 0.0)
        use = (
            f"{cpu / (p.window_s * cores) * 100:.0f}%" if cores and p.window_s else "-"
        )
        row += [
            formatter.ms(s["p50"]),
            formatter.ms(s["p95"]),
            formatter.ms(s["p99"]),
            formatter.ms(s["max"]),
        ]
        row += [str(p.conflicts), str(p.retries), str(p.failed)]
        row += [str(sum(p.errors.values())), violations_cell(p.invariants)]
        row += [_cpu(p.client_cpu_s)]
        row += [_cpu(p.server_cpu_s), use]
        rows.append(row)
    return Table("throughput and latency by client count", header, rows)


def operations_table(points: list[ScalePoint]) -> Table:
    """Per point and operation: count and p50/p95/p99/max."""
    header = ["storage", "clients", "operation", "ops", "p50 ms", "p95 ms"]
    header += ["p99 ms", "max ms"]
    rows = []
    for p in points:
        for name in OPERATION_NAMES:
            s = hist.summary_ms(p.histogram(name))
            if not s["count"]:
                continue
            rows.append(
                [p.storage, str(p.clients), name, str(s["count"])]
                + [
                    formatter.ms(s["p50"]),
                    formatter.ms(s["p95"]),
                    formatter.ms(s["p99"]),
                    formatter.ms(s["max"]),
                ]
            )
    return Table("latency per operation", header, rows)


def text(run: ScaleRun) -> str:
    points = list(run.points)
    parts = [points_table(points, run.cores).text(), operations_table(points).text()]
    return "\n\n".join(parts + ["\n".join(notes(run)), LEGEND]) + "\n"


def notes(run: ScaleRun) -> list[str]:
    """What the tables do not say, a line each: rates not honoured, errors,
    faults, the consistency check, the load average."""
    lines = []
    for p in run.points:
        where = f"{p.storage}, {p.clients} client(s)"
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
        for note in p.notes:
            lines.append(f"{where}: {note}")
        if p.interrupted:
            lines.append(f"{where}: interrupted")
        lines.append(f"{where}: {p.invariants['summary']}")
        if p.invariants.get("what"):
            lines.append(f"  {p.invariants['what']}")
        lines += [f"  {problem}" for problem in p.invariants["problems"]]
    for when in ("before", "after"):
        key = "load_average" if when == "before" else "load_average_after"
        load = run.metadata.get(key)
        if load:
            loads = " ".join(f"{x:.2f}" for x in load)
            lines.append(f"load average {when} the run: {loads}")
    return lines


LEGEND = (
    "ops/s and commits/s: successful operations and commits per second of the "
    "window; latency from each operation's start (open loop: its arrival), "
    "retries included; retries: conflicting attempts retried; failed: retries "
    "ran out; violations: what the consistency check found in the data after "
    "the point (0: checked, none; -: not checked); CPU use: client + server "
    "CPU over the window and all cores "
    "(near 100%: the machine, not the storage, is the limit); "
    "'!': offered rate not honoured."
)


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


def plot(run: ScaleRun, path: Path) -> None:
    """Throughput and p99 against clients, one line per storage."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5))
    for storage in run.storages():
        points = [p for p in run.points if p.storage == storage]
        xs = [p.clients for p in points]
        left.plot(xs, [p.ops_per_s for p in points], marker="o", label=storage)
        p99 = [hist.summary_ms(p.histogram())["p99"] for p in points]
        right.plot(xs, p99, marker="o", label=storage)
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    counts = sorted({p.clients for p in run.points})
    for ax, ylabel in ((left, "operations / s"), (right, "p99 latency (ms)")):
        ax.set_xscale("log", base=2)
        ax.set_xticks(counts)
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("clients (one process each)")
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
        ax.legend()
    left.set_ylim(bottom=0)
    right.set_yscale("log")
    load = run.metadata.get("load_average")
    cores = run.metadata.get("host", {}).get("cpu_count")
    fig.suptitle(
        f"vfab-bench scale: {cores} cores"
        + (f", load average {load[0]:.2f} before" if load else "")
    )
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
