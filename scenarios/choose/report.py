"""choose's text: the verdict first (scenarios.choose.verdict), then what
it rests on: one client's latency per operation and throughput by client
count (scale's tables), a --from copy's transactions by size, its reads
cold and warm, size on disk."""

from __future__ import annotations

import dataclasses

from scenarios.choose.model import Candidate, ChooseRun
from scenarios.choose.verdict import lines
from scenarios.clients import histogram
from scenarios.results.formatter import size
from scenarios.results.table import Table, wrapped
from scenarios.scale import report as scale_report
from scenarios.scale.report import latency
from scenarios.verify.runner import RIGHT


def copy_table(candidates: list[Candidate]) -> Table:
    """Per candidate and transaction size: transactions, p50 and p99."""
    header = ["storage", "records per txn", "transactions", "p50", "p99", "max"]
    rows = []
    for c in candidates:
        if c.copy is None:
            continue
        for b in c.copy.by_size:
            s = histogram.summary_ms(histogram.merged([b.hist]))
            rows.append(
                [c.storage, f"<= {b.records:,}", f"{b.transactions:,}"]
                + [latency(s[k]) for k in ("p50", "p99", "max")]
            )
    return Table("copying the source: latency by transaction size", header, rows)


def reads_table(candidates: list[Candidate]) -> Table:
    header = ["storage", "readers", "cache", "loads/s", "p50", "p99"]
    rows = []
    for c in candidates:
        for r in c.copy.reads if c.copy else ():
            s = histogram.summary_ms(histogram.merged([r.hist]))
            rows.append(
                [c.storage, str(r.clients), "cold" if r.cold else "warm"]
                + [f"{r.loads_per_s:,.0f}", latency(s["p50"]), latency(s["p99"])]
            )
    return Table("reading the source's objects by oid", header, rows)


def candidates_table(run: ChooseRun) -> Table:
    header = ["storage", "verdict", "size on disk", "copied txn/s", "checked"]
    rows = []
    for c in run.candidates:
        word, why = c.verdict()
        rate = f"{c.copy.transactions_per_s:,.1f}" if c.copy else "-"
        checked = why.partition(";")[0] if word == RIGHT else "see the verdict"
        rows.append([c.storage, c.state(), size(c.size_bytes), rate, checked])
    return Table("candidates", header, rows)


def tables(run: ChooseRun) -> list[Table]:
    out = [candidates_table(run)]
    points = list(run.as_scale().every_point)
    if points:
        one = [p for p in points if p.clients == 1]
        ops = dataclasses.replace(
            scale_report.operations_table(one),
            title="one client's latency per operation",
        )
        out += [scale_report.points_table(points, run.cores), ops]
    candidates = [c for c in run.candidates if c.copy is not None]
    if candidates:
        out += [copy_table(candidates), reads_table(candidates)]
    return out


def text(run: ChooseRun) -> str:
    verdict = "\n".join(wrapped(line) for line in lines(run))
    return "\n\n".join([verdict, *(t.text() for t in tables(run))]) + "\n"
