"""The report in the 2000 layout: tasks as rows, storages as columns.

A cell is the median in seconds and the spread (standard deviation as a
percentage of the mean over the trials); a spread above 10% is marked "!".
The same tables come out as plain text for the terminal and as Markdown.
"""

from __future__ import annotations

from collections.abc import Callable

from scenarios.results import NOISY_RSD, PhaseResult, RunResult, Stats


def seconds(value: float) -> str:
    """Seconds, with precision that suits the magnitude."""
    if value >= 100:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.1f}"
    if value >= 1:
        return f"{value:.2f}"
    return f"{value:.4f}"


def time_cell(stats: Stats) -> str:
    cell = f"{seconds(stats.median)} ±{stats.rsd * 100:.0f}%"
    return cell + ("!" if stats.noisy else " ")


def _table(
    run: RunResult, size: str, cell: Callable[[PhaseResult], str]
) -> tuple[list[str], list[list[str]]]:
    header = ["task:", *run.storages]
    rows = []
    for phase in run.phases:
        row = [phase]
        for storage in run.storages:
            r = run.get(storage, phase, size)
            row.append(cell(r) if r is not None else "-")
        rows.append(row)
    return header, rows


def tables(run: RunResult) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, header, rows) for each table of the report."""
    out = []
    for size in run.sizes:
        any_r = next(r for r in run.results if r.size == size)
        n = len(any_r.samples)
        out.append(
            (
                f"wall time (s), size {size}, median of {n} trial(s)",
                *_table(run, size, lambda r: time_cell(r.wall)),
            )
        )
        out.append(
            (
                f"CPU time of the client process (s), size {size}",
                *_table(run, size, lambda r: time_cell(r.cpu)),
            )
        )

        def counts(r: PhaseResult) -> str:
            if r.loads is None:
                return "-"
            return f"{r.loads}/{r.stores}"

        out.append((f"objects loaded/stored, size {size}", *_table(run, size, counts)))
    return out


def legend(run: RunResult) -> str:
    return (
        f"± is the standard deviation as % of the mean; ! marks a spread "
        f"above {NOISY_RSD:.0%}. CPU time excludes server processes."
    )


def text(run: RunResult) -> str:
    """Plain-text tables, columns aligned."""
    parts = []
    for title, header, rows in tables(run):
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
        lines = [title]
        for row in [header, *rows]:
            cells = [row[0].ljust(widths[0])]
            cells += [c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)]
            lines.append("  ".join(cells).rstrip())
        parts.append("\n".join(lines))
    parts.append(legend(run))
    return "\n\n".join(parts) + "\n"


def markdown(run: RunResult) -> str:
    """The same tables in GitHub Markdown, with the run's versions."""
    meta = run.metadata
    versions = ", ".join(f"{k} {v}" for k, v in meta.get("versions", {}).items() if v)
    parts = [
        "# vfab-loadtest results",
        f"{meta.get('date', '')}; Python {meta.get('python', {}).get('version', '?')}; "
        f"{versions}; {meta.get('host', {}).get('cpu_count', '?')} CPUs.",
    ]
    for title, header, rows in tables(run):
        lines = [
            f"## {title}",
            "",
            "| " + " | ".join(header) + " |",
            "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|",
        ]
        lines += ["| " + " | ".join(c.strip() for c in row) + " |" for row in rows]
        parts.append("\n".join(lines))
    parts.append(legend(run))
    return "\n\n".join(parts) + "\n"
