"""A matrix's tables: per benchmark, time per object (the matrix's
statistic with its interval) with a row per concurrency kind, concurrency
and transaction size and a column per storage; the FAQ's claims answered;
each group's check and what its cold reads could not empty."""

from __future__ import annotations

from scenarios.matrix import claims
from scenarios.matrix.config import BENCHMARKS
from scenarios.matrix.model import MatrixRun, axis
from scenarios.results import environment, significance, table
from scenarios.results.formatter import plural
from scenarios.results.table import Table


def _micros(value: float) -> str:
    return f"{value:.1f}" if value < 1000 else f"{value:,.0f}"


def tables(run: MatrixRun, stat: str | None = None) -> list[Table]:
    """A table per benchmark (µs per object), then the groups' checks."""
    s = run.statistic(stat)
    out: list[Table] = []
    storages = run.storages
    rounds = max((len(c.rounds) for c in run.results), default=0)
    for bench in run.benchmarks:
        rows = []
        for kind, n in run.axes:
            for size in run.sizes:
                row = [axis(kind, n), f"{size:,}"]
                cells = [run.get(st, bench, kind, n, size) for st in storages]
                if not any(cells):
                    continue
                for c in cells:
                    row.append(
                        "-"
                        if c is None
                        else significance.cell_text(c.per_object_us, s, _micros)
                    )
                rows.append(row)
        b = BENCHMARKS.get(bench)
        what = f" ({b.description})" if b else ""
        out.append(
            Table(
                f"{bench}{what}: µs per object, {s.label} of {plural(rounds, 'round')}",
                ["clients", "objects/txn", *storages],
                rows,
                label_left=True,
            )
        )
    rows = []
    for g in run.groups:
        verdict = (
            f"FAILED: {g.error}"
            if g.error
            else "right"
            if g.ok
            else f"{plural(len(g.problems), 'problem')}: {g.problems[0]}"
        )
        rows.append(
            [g.storage, axis(g.kind, g.concurrency), verdict, f"{g.seconds_s:.1f}"]
        )
    if rows:
        out.append(
            Table(
                "each group's clients checked (acknowledged writes read back)",
                ["storage", "clients", "check", "seconds"],
                rows,
                label_left=True,
            )
        )
    return out


def claims_lines(run: MatrixRun, stat: str | None = None) -> list[str]:
    """The FAQ's claims answered, a line each, then the versions; one line
    when the run has none of the storages they compare."""
    found = claims.answers(run, stat)
    if all(a.agree is None for a in found):
        return [
            "RelStorage's SQLite FAQ's claims compare file, zeo and "
            "relstorage-sqlite: this run answers none of them"
        ]
    out = ["RelStorage's SQLite FAQ, its claims checked on this run:"]
    for a in found:
        out.append(f"  {a.sentence()}")
    out.append(f"  on {claims.versions_line(run)}")
    return out


def cold_lines(run: MatrixRun) -> list[str]:
    """What the cold reads emptied and kept, per storage."""
    seen: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
    for g in run.groups:
        if g.cleared and g.storage not in seen:
            seen[g.storage] = (g.cleared, g.kept)
    return [
        f"Cold reads on {st} emptied {', '.join(c)}; could not empty {', '.join(k)}."
        for st, (c, k) in seen.items()
    ]


def _legend(run: MatrixRun, stat: str | None) -> str:
    parts = [
        "Each round: every client runs the benchmark's transactions at once; "
        "the round's value is the slowest client's time per object "
        "(as zodbshootout takes its slowest worker).",
        significance.legend(stat or significance.recorded(run.metadata)),
        *cold_lines(run),
        *environment.lines(run.metadata),
    ]
    return "  ".join(parts)


def text(run: MatrixRun, stat: str | None = None) -> str:
    body = table.text(tables(run, stat), _legend(run, stat))
    claims = [table.wrapped(line) for line in claims_lines(run, stat)]
    return body + "\n" + "\n".join(claims) + "\n"


def markdown(run: MatrixRun, stat: str | None = None) -> str:
    body = table.markdown(tables(run, stat), ["# vfab-loadtest matrix"])
    return body + "\n" + "\n".join(claims_lines(run, stat)) + "\n"
