"""What `vfab-bench ab` prints: the verdict first, the two environments
and what differs between them (versions, C or Python implementations,
commits), then the cells, largest change first; and its JSON."""

from __future__ import annotations

import statistics
from typing import Any

from scenarios.ab.cells import SOURCES
from scenarios.ab.judge import Judged, judge, verdict
from scenarios.ab.model import ABRun, SideInfo
from scenarios.results import environment
from scenarios.results.formatter import duration, plural
from scenarios.results.metadata import PACKAGES
from scenarios.results.significance import Difference, adjust, difference
from scenarios.results.table import Table, paragraph, wrapped


def side_line(side: SideInfo) -> str:
    how = {
        "venv": "existing environment",
        "requirements": "requirements",
        "checkout": "checkout",
        "release": "release",
    }[side.kind]
    state = (
        "" if side.key is None else (", built now" if side.built_now else ", cached")
    )
    python = side.hello.get("python", {})
    return (
        f"{side.name}: {how} {side.text} (python {python.get('version', '?')} "
        f"{python.get('implementation', '')}{state}: {side.python})"
    )


def measuring_line(run: ABRun) -> str:
    """Where both sides' measuring code came from (the checkout in use)."""
    code = run.metadata.get("measuring_code") or {}
    commit = code.get("commit")
    state = f" at {commit[:12]}" if commit else ""
    state += " with changes" if code.get("dirty") else ""
    return f"both sides measured with {code.get('path', '?')}{state}"


def differences(a: SideInfo, b: SideInfo) -> list[str]:
    """What differs between the sides: package versions, implementations,
    sources and commits (a checkout's)."""
    out = []
    va, vb = a.versions, b.versions
    # Every version that changed; a package on one side only, where it is
    # one that decides the numbers or a patch tools/ab_patched_env.py put
    # there (the others, tools of an existing environment, are counted).
    named = {n.lower() for n in PACKAGES} - {"vfab-loadtest"} | {"vfab-ab-patch"}
    only = 0
    for name in sorted(va.keys() | vb.keys()):
        if name == "vfab-loadtest" or va.get(name) == vb.get(name):
            continue
        if name in va and name in vb or name in named:
            out.append(f"{name} {va.get(name, 'absent')} -> {vb.get(name, 'absent')}")
        else:
            only += 1
    ia, ib = a.implementations, b.implementations
    for name in sorted(ia.keys() | ib.keys()):
        if ia.get(name) != ib.get(name):
            out.append(f"{name} in {ia.get(name, '?')} -> {ib.get(name, '?')}")
    sa, sb = a.hello.get("sources") or {}, b.hello.get("sources") or {}
    for name in sorted(sa.keys() | sb.keys()):
        ca, cb = (s.get(name, {}).get("commit") for s in (sa, sb))
        if ca != cb:
            out.append(
                f"{name} commit {ca or 'from an index'} -> {cb or 'from an index'}"
            )
    for side in (a, b):
        if side.kind == "checkout":
            commit = side.code.get("commit") or "no git"
            dirty = (
                " with changes"
                if side.code.get("dirty") or not side.code.get("commit")
                else ""
            )
            out.append(f"{side.name}'s checkout at {commit[:12]}{dirty}")
    if only:
        out.append(f"{plural(only, 'other package')} on one side only")
    if (a.hello.get("pure_python") or "") != (b.hello.get("pure_python") or ""):
        out.append(
            f"PURE_PYTHON {a.hello.get('pure_python')} -> {b.hello.get('pure_python')}"
        )
    return out


def cell_rows(judged: list[Judged]) -> list[list[str]]:
    rows = []
    for j in judged:
        c = j.cell
        half = j.half_width
        rows.append(
            [
                f"{c.column} {c.row}",
                duration(statistics.median(c.a)),
                duration(statistics.median(c.b)),
                "-" if j.ratio is None else f"{j.ratio:.3f}",
                "-" if half is None else f"±{half * 100:.1f}%",
                j.words,
            ]
        )
    return rows


def tables(judged: list[Judged]) -> list[str]:
    """A table per source, largest change first."""
    lines = []
    header = ["cell", "A median", "B median", "B/A", "95%", "verdict"]
    for source in dict.fromkeys(j.cell.source for j in judged):
        mine = [j for j in judged if j.cell.source == source]
        lines += ["", f"{SOURCES.get(source, source)}, largest change first:"]
        lines += Table("", header, cell_rows(mine)).lines()
    return lines


def text(run: ABRun) -> str:
    judged = judge(run.cells)
    lines = [f"verdict: {verdict(judged)}", *about(run, judged)]
    lines = [wrapped(line) for line in lines]
    lines += tables(judged)
    lines += [
        "",
        paragraph(
            "B/A: the geometric mean of the pairs' ratios; 95%: the half-width "
            "of its bootstrap interval over pairs."
        ),
    ]
    return "\n".join(lines) + "\n"


def about(run: ABRun, judged: list[Judged]) -> list[str]:
    """What follows the verdict, a line each (unwrapped): the mode, the
    sides and their differences, the duet's overlap, the unpaired
    reading, the machine, what was not paired."""
    pairs = len(run.cells[0].a) if run.cells else 0
    how = (
        "A and B at the same moment, one core each"
        if run.mode == "duet"
        else "A and B one after the other, in a random order each round"
    )
    lines = [
        f"ab ({run.mode}): {plural(pairs, 'pair')} per cell, {how}",
        measuring_line(run),
        side_line(run.a),
        side_line(run.b),
    ]
    diff = differences(run.a, run.b)
    lines.append(
        "differences: " + "; ".join(diff)
        if diff
        else "differences: none in the packages, their implementations or commits"
    )
    if run.overlap:
        lines.append(
            f"duet: both ran at once for {statistics.mean(run.overlap) * 100:.0f}% "
            f"of the shorter trial on average (least {min(run.overlap) * 100:.0f}%)"
        )
    lines.append(unpaired_line(judged))
    lines += environment.lines(run.metadata)
    for missing in run.metadata.get("unmatched") or []:
        lines.append(f"not paired: {missing}")
    return lines


def unpaired(judged: list[Judged]) -> dict[tuple[str, str, str], Difference]:
    """Each cell's trials taken unpaired, as compare takes two runs (its
    statistic, its permutation test, adjusted across the cells): what the
    pairing saves from the machine's drift."""
    keys = [(j.cell.source, j.cell.column, j.cell.row) for j in judged]
    differences = adjust([difference(j.cell.a, j.cell.b) for j in judged])
    return dict(zip(keys, differences, strict=True))


def unpaired_line(judged: list[Judged]) -> str:
    changed = sum(d.significant for d in unpaired(judged).values())
    paired = sum(j.significant for j in judged)
    return (
        f"the same trials unpaired, as compare takes two runs: "
        f"{plural(changed, 'cell')} called changed (paired: {paired})"
    )


def document(run: ABRun) -> dict[str, Any]:
    """The JSON: the raw run, and each cell's judgement beside it."""
    out = run.document()
    judged = judge(run.cells)
    apart = unpaired(judged)
    out["judged"] = [
        {
            "source": j.cell.source,
            "column": j.cell.column,
            "row": j.cell.row,
            "pairs": j.pairs,
            "ratio": j.ratio,
            "low": j.low,
            "high": j.high,
            "p_value": j.p_value,
            "q_value": j.q_value,
            "significant": j.significant,
            "verdict": j.words,
            "unpaired": {
                "ratio": (d := apart[(j.cell.source, j.cell.column, j.cell.row)]).ratio,
                "q_value": d.q_value,
                "significant": d.significant,
                "verdict": d.words() if d.significant else "not significant",
            },
        }
        for j in judged
    ]
    return out
