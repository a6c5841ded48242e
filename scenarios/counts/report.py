"""A count run's tables, in the layout of the time tables: instructions in
millions ("≈" and the spread where not exact), system calls per phase
(fsync/read/write/seek/send/recv) one cell per storage.
"""

from __future__ import annotations

from collections.abc import Callable

from scenarios.counts.model import INSTRUCTIONS, Cell, CountRun
from scenarios.counts.syscalls import GROUPS
from scenarios.results import table
from scenarios.results.formatter import plural
from scenarios.results.table import Table


def millions(n: int) -> str:
    return f"{n / 1e6:,.3f} M"


def count_cell(cell: Cell | None, fmt: Callable[[int], str] = millions) -> str:
    """ "12.345 M", or "≈ 12.345 M ±3.1%" for a cell that is not exact or
    whose trials differed, "-" when nothing was counted."""
    if cell is None:
        return "-"
    text = fmt(cell.value)
    if cell.exact:
        return text
    return f"≈ {text} ±{cell.spread * 100:.1f}%"


def calls_cell(run: CountRun, storage: str, phase: str, side: str, size: str) -> str:
    cells = [run.cell(storage, phase, side, g, size) for g in GROUPS]
    if all(c is None for c in cells):
        return "-"
    parts = [
        (
            "-"
            if c is None
            else f"≈{c.value}"
            if not c.exact and c.spread
            else str(c.value)
        )
        for c in cells
    ]
    return "/".join(parts)


def _table(
    run: CountRun, size: str, cell: Callable[[str, str], str]
) -> tuple[list[str], list[list[str]]]:
    header = ["task:", *run.storages]
    rows = [[phase, *(cell(s, phase) for s in run.storages)] for phase in run.phases]
    return header, rows


def trials_of(run: CountRun, size: str) -> str:
    counts = {len(r.samples) for r in run.results if r.size == size}
    if not counts:
        return "0 trials"
    low, high = min(counts), max(counts)
    if low == high:
        return plural(low, "counted trial")
    return f"{low}-{high} counted trials"


def size_tables(run: CountRun, size: str) -> list[Table]:
    """The tables of one data set size."""
    groups = "/".join(GROUPS)

    def instructions(side: str) -> Callable[[str, str], str]:
        return lambda s, p: count_cell(run.cell(s, p, side, INSTRUCTIONS, size))

    def calls(side: str) -> Callable[[str, str], str]:
        return lambda s, p: calls_cell(run, s, p, side, size)

    n = trials_of(run, size)
    out = [
        Table(
            f"instructions of the client process, size {size}, median of {n}",
            *_table(run, size, instructions("client")),
        )
    ]
    servers = [s for s in run.storages if run.has_server(s)]
    if servers:
        out.append(
            Table(
                f"instructions of the server process (runzeo), size {size}",
                *_table(run, size, instructions("server")),
            )
        )
    out.append(
        Table(
            f"I/O system calls of the client process: {groups}, size {size}",
            *_table(run, size, calls("client")),
        )
    )
    if servers:
        out.append(
            Table(
                f"I/O system calls of the server processes: {groups}, size {size}",
                *_table(run, size, calls("server")),
            )
        )
    return out


def tables(run: CountRun) -> list[Table]:
    """Each table of the report, in order."""
    return [t for size in run.sizes for t in size_tables(run, size)]


def legend(run: CountRun) -> str:
    counts = run.metadata.get("counts", {})
    wall = counts.get("wall_s")
    return (
        "Counted, not timed: instructions under valgrind's callgrind, system "
        "calls under strace -f, with the hash seed, clocks, randomness and "
        "temporary paths fixed, so the same code counts the same on any run "
        "and any load (docs/counts.md). A cell is the median of the counted "
        "trials; ≈ marks a cell that cannot be exact (a server's, a ZEO "
        "client's, receives) and ± its trials' spread, (max - min) / median. "
        "Differences of 2% and more are reliable; below that, CPython's memory "
        "layout moves single phases between builds. PostgreSQL's and "
        "MariaDB's servers are not counted."
        + (f" This run took {wall:.0f} s." if isinstance(wall, (int, float)) else "")
    )


def text(run: CountRun) -> str:
    return table.text(tables(run), legend(run))


def markdown(run: CountRun) -> str:
    meta = run.metadata
    preamble = [
        "# vfab-loadtest counts",
        f"{meta.get('date', '')}; Python "
        f"{meta.get('python', {}).get('version', '?')}; "
        f"{meta.get('counts', {}).get('valgrind', '')}.",
    ]
    return table.markdown(tables(run), preamble, legend(run))
