"""The run's tables in the 2000 layout (phases as rows, storages as columns),
as text and Markdown: a time cell is the run's statistic with its
interval ("!" when wide, "~" too short to compare), a count cell the
median; a table whose cells are all equal or empty is left out, said
(docs/internals.md).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from scenarios.bench import rows as rows_model
from scenarios.results import environment, formatter, significance, table
from scenarios.results.model import PhaseResult, RunResult, TrialSummary
from scenarios.results.significance import SHORT_S
from scenarios.results.stats import median, median_int
from scenarios.results.table import Table
from storages import registry


def run_statistic(run: RunResult, stat: str | None = None) -> str:
    """*stat*, or the statistic the run asked its tables to show (older
    files, which did not say, get the default)."""
    return significance.statistic(stat or significance.recorded(run.metadata)).name


def time_cell(values: list[float], stat: str) -> str:
    """The statistic, then a fixed-width mark: the interval's half-width
    ("±12%", "!" after it when wide), "~" under SHORT_S, "1 trial" for
    one trial (no interval)."""
    iv = significance.interval(values, stat)
    rel = iv.relative_half_width
    if iv.estimate < SHORT_S:
        mark = "~"
    elif rel is None:
        mark = "1 trial"
    else:
        mark = "±" + ("inf" if rel == float("inf") else f"{rel * 100:.0f}%").rjust(4)
    flag = "!" if iv.wide and iv.estimate >= SHORT_S else " "
    return f"{formatter.duration(iv.estimate)} {mark.ljust(5)}{flag}"


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


def _any(run: RunResult, size: str, value: Callable[[PhaseResult], object]) -> bool:
    return any(value(r) is not None for r in run.results if r.size == size)


def counts(r: PhaseResult) -> str:
    if r.loads is None:
        return "-"
    return f"{r.loads}/{r.stores}"


def part_cell(r: PhaseResult, field: str, stat: str) -> str:
    """The statistic of the time the phase spent in *field* (batch_commit_s,
    gc_s) over the trials, or "-"."""
    values = r.values(lambda s: getattr(s, field))
    return formatter.duration(significance.statistic(stat)(values)) if values else "-"


def within_cell(r: PhaseResult, stat: str) -> str:
    """Time in batch commits / cyclic GC inside the phase."""
    return f"{part_cell(r, 'batch_commit_s', stat)} / {part_cell(r, 'gc_s', stat)}"


def hits_cell(r: PhaseResult) -> str:
    return "-" if r.cache_hits is None else str(r.cache_hits)


def phase_tables(run: RunResult, size: str, stat: str | None = None) -> list[Table]:
    stat = run_statistic(run, stat)
    label = significance.statistic(stat).label
    out: list[Table] = [
        Table(
            f"wall time, size {size}, {label} of {trial_counts(run, size)}",
            *_table(run, size, lambda r: time_cell(r.wall_values, stat)),
        ),
        Table(
            f"CPU time of the client process, size {size}, {label}",
            *_table(run, size, lambda r: time_cell(r.cpu_values, stat)),
        ),
        Table(f"objects loaded/stored, size {size}", *_table(run, size, counts)),
    ]
    if _any(run, size, lambda r: r.size_change_bytes):
        out.append(
            Table(
                f"storage size change (bytes written; negative: shrank), size {size}",
                *_table(run, size, lambda r: formatter.size(r.size_change_bytes)),
            )
        )
    if _any(run, size, lambda r: r.rss_peak_bytes):
        scope = "during the phase"
        if run.metadata.get("rss") == "since-start":
            scope = "since the process started"
        out.append(
            Table(
                f"peak RSS of the client process {scope}, size {size}",
                *_table(run, size, lambda r: formatter.size(r.rss_peak_bytes)),
            )
        )
    if _any(run, size, lambda r: r.cache_hits):
        out.append(
            Table(f"ZEO client cache hits, size {size}", *_table(run, size, hits_cell))
        )
    if _any(run, size, lambda r: r.values(lambda s: s.batch_commit_s) or None):
        out.append(
            Table(
                "of the wall time: commits of full batches (--batch) / "
                f"Python's cyclic GC, size {size}",
                *_table(run, size, lambda r: within_cell(r, stat)),
            )
        )
    elif _any(run, size, lambda r: r.values(lambda s: s.gc_s) or None):
        out.append(
            Table(
                f"of the wall time: Python's cyclic GC, size {size}",
                *_table(run, size, lambda r: part_cell(r, "gc_s", stat)),
            )
        )
    return out


def trial_counts(
    run: RunResult, size: str, phases: Collection[str] | None = None
) -> str:
    """How many trials the time cells of *size* (of *phases*, or all) are
    over: "1 trial", "5 trials", or "5-38 trials" when some had more than
    others (the 2000 rows' top-up trials, see the runner)."""
    counts = {
        len(r.samples)
        for r in run.results
        if r.size == size and (phases is None or r.phase in phases)
    }
    if not counts:
        return "no trial"
    low, high = min(counts), max(counts)
    return formatter.plural(low, "trial") if low == high else f"{low}-{high} trials"


def trials_cell(run: RunResult, storage: str, size: str) -> str:
    """A storage's trials: "12" or, with top-ups, "38 / 5" (the 2000 rows'
    / every other row's)."""
    counts = [
        len(r.samples) for r in run.results if (r.storage, r.size) == (storage, size)
    ]
    if not counts:
        return "-"
    low, high = min(counts), max(counts)
    return str(low) if low == high else f"{high} / {low}"


def cost_per_object(
    run: RunResult, storage: str, size: str, cpu: bool = False, stat: str | None = None
) -> float | None:
    """Seconds per model object built: the build rows' wall (or CPU) time,
    the statistic of each (*stat*, else the run's) summed, over the objects
    the generator built."""
    trials = run.trials_of(storage, size)
    if not trials:
        return None
    objects = trials[0].objects
    rows = [run.get(storage, p, size) for p in rows_model.BUILD_PHASES]
    if not objects or any(r is None for r in rows):
        return None
    of = significance.statistic(run_statistic(run, stat))
    total = sum(of(r.cpu_values if cpu else r.wall_values) for r in rows if r)
    return total / objects


def _stat(trials: list[TrialSummary], *path: str) -> str:
    values = []
    for t in trials:
        v: object = t.stats
        for key in path:
            v = v.get(key) if isinstance(v, dict) else None
        if isinstance(v, (int, float)):
            values.append(float(v))
    m = median(values)
    return "-" if m is None else f"{m:.0f}"


def zodb_cache_size() -> int:
    """ZODB.DB's own default connection cache target (400 objects), read from
    ZODB rather than repeated here."""
    import inspect

    import ZODB

    default = inspect.signature(ZODB.DB.__init__).parameters["cache_size"].default
    return int(default)


def summary_table(run: RunResult, size: str, stat: str | None = None) -> Table | None:
    """One column per storage: what the run left behind."""
    storages = [s for s in run.storages if run.trials_of(s, size)]
    if not storages:
        return None
    by = {s: run.trials_of(s, size) for s in storages}

    options = run.metadata.get("config", {}).get("options", {})
    cache_target = str(options.get("cache_size") or zodb_cache_size())

    def row(label: str, cell: Callable[[str], str]) -> list[str]:
        return [label, *(cell(s) for s in storages)]

    def median_size(s: str, field: str) -> str:
        return formatter.size(median_int(getattr(t, field) for t in by[s]))

    def cost(s: str, cpu: bool = False) -> str:
        c = cost_per_object(run, s, size, cpu, stat)
        return "-" if c is None else f"{c * 1e6:.1f}"

    rows = [
        row(
            "timed trials (2000 rows / the others)", lambda s: trials_cell(run, s, size)
        ),
        row("size on disk after the run", lambda s: median_size(s, "size_bytes")),
        row(
            "peak RSS of the client process",
            lambda s: formatter.size(
                max((t.rss_peak_bytes or 0) for t in by[s]) or None
            ),
        ),
        row("model objects built", lambda s: str(by[s][0].objects)),
        row("objects per transaction (batch)", lambda s: str(by[s][0].batch or "all")),
        row(
            "connection cache target (objects)",
            lambda s: str(by[s][0].stats.get("cache_target") or cache_target),
        ),
        row("build rows: wall µs per object built", cost),
        row("build rows: CPU µs per object built", lambda s: cost(s, cpu=True)),
    ]
    # Each storage declares its rows (StorageFactory.summary_rows).
    for label, path in registry.summary_rows():
        cells = row(label, lambda s, path=path: _stat(by[s], *path))  # type: ignore[misc]
        if any(c != "-" for c in cells[1:]):
            rows.append(cells)
    return Table(f"after the run, size {size}", ["", *storages], rows)


def all_tables(run: RunResult, stat: str | None = None) -> list[Table]:
    """Each table of the report, in order, time cells by *stat* (None: the
    run's statistic), uniform ones included."""
    out = []
    for size in run.sizes:
        out += phase_tables(run, size, stat)
        summary = summary_table(run, size, stat)
        if summary is not None:
            out.append(summary)
    return out


#: A cell that holds nothing: the storage does not have the row or the
#: counter.
EMPTY_CELLS = frozenset({"", "-", "- / -"})


def uniform(t: Table) -> str | None:
    """The one value every non-empty cell of a per-phase table of two cells
    or more holds ("" when every cell is empty), or None when cells differ.
    The summary table (a different quantity per row) is never uniform."""
    if not t.header or t.header[0] != "task:":
        return None
    cells = [c.strip() for row in t.rows for c in row[1:]]
    values = set(cells) - EMPTY_CELLS
    if len(values) > 1 or (values and len(cells) < 2):
        return None
    return values.pop() if values else ""


def tables(run: RunResult, stat: str | None = None) -> list[Table]:
    """The tables worth showing: all_tables() without those whose cells are
    all equal or empty (omitted() says which)."""
    return [t for t in all_tables(run, stat) if uniform(t) is None]


def omitted(run: RunResult, stat: str | None = None) -> list[str]:
    """One line per table left out, with the value every cell held."""
    out = []
    for t in all_tables(run, stat):
        value = uniform(t)
        if value is None:
            continue
        what = t.title.split(", size")[0]
        out.append(
            f"{what}: {value.rstrip()} in every cell"
            if value
            else f"{what}: nothing measured"
        )
    return out


def legend(run: RunResult, name: str | None = None) -> str:
    stat = significance.statistic(run_statistic(run, name))
    return (
        f"A time cell is the {stat.label} of the trials; ± is half the width "
        f"of its {1 - significance.ALPHA:.0%} bootstrap interval as % of it; ! "
        f"marks an interval wider than ±{significance.WIDE:.0%}; ~ a value "
        f"under {SHORT_S * 1000:g} ms, too short to compare between runs. "
        "CPU time and RSS exclude server processes. "
        "Cold: new DB and client on the same data (the OS page cache is not "
        "dropped); warm: objects ghosted, lower caches warm; hot: objects in "
        "memory. Cold minus hot is the time spent filling the cache."
        + storage_notes(run)
        + speed_note(run)
    )


def machine_lines(metadata: dict[str, Any]) -> list[str]:
    """The machine's sentences: the load average (a warning when it was
    busy, at the start, the end or both: said once) and the speed probe."""
    env = environment.of(metadata)
    load = environment.load_line(env)
    if load and env.get("warnings"):
        load = (
            "Warning: the machine was busy: l" + load[1:].rstrip(".") + "; "
            "figures may be slower and noisier than on an idle machine."
        )
    return [line for line in (load, environment.speed_line(env)) if line]


def speed_note(run: RunResult) -> str:
    """ " " and the machine's sentences (load, speed probe, busy warning),
    or "" when the run recorded none."""
    return "".join(f" {line}" for line in machine_lines(run.metadata))


def storage_notes(run: RunResult) -> str:
    """What the trials' stats say of how each storage was set up (a
    RelStorage's history mode and driver: the storage's report_note), one
    clause per storage; "" when none say."""
    notes: dict[str, str] = {}
    for trial in run.trials:
        if trial.storage in notes:
            continue
        note = registry.report_note(trial.storage, trial.stats)
        if note:
            notes[trial.storage] = f"{trial.storage}: {note}"
    return f" Storages: {'; '.join(notes.values())}." if notes else ""


def omitted_note(run: RunResult, stat: str | None = None) -> str:
    """ " Not shown (every cell equal or empty): ..." or ""."""
    lines = omitted(run, stat)
    return (
        f" Not shown (every cell equal or empty): {'; '.join(lines)}." if lines else ""
    )


def text(run: RunResult, stat: str | None = None) -> str:
    """Plain-text tables, columns aligned: every table (report --all)."""
    return table.text(tables(run, stat), legend(run, stat) + omitted_note(run, stat))


def markdown(run: RunResult, stat: str | None = None) -> str:
    """The same tables in GitHub Markdown, with the run's versions."""
    meta = run.metadata
    versions = ", ".join(f"{k} {v}" for k, v in meta.get("versions", {}).items() if v)
    preamble = [
        "# vfab-loadtest results",
        f"{meta.get('date', '')}; Python {meta.get('python', {}).get('version', '?')}; "
        f"{versions}; {meta.get('host', {}).get('cpu_count', '?')} CPUs.",
    ]
    return table.markdown(
        tables(run, stat), preamble, legend(run, stat) + omitted_note(run, stat)
    )
