"""`vfab-bench verify`'s tables (scenarios.results.table) and its JSON
(format VERIFY in scenarios.results.files): the scenarios, the load's
points with their attempts, errors and violations, what each check found,
and last the verdict per storage with why."""

from __future__ import annotations

from typing import Any

from scenarios.checker.consistency import KINDS
from scenarios.results.files import VERIFY
from scenarios.results.formatter import plural
from scenarios.results.table import Table
from scenarios.verify.run import StorageVerdict


def _cell(p: Any, kind: str) -> str:
    if not p.invariants.get("checked"):
        return "-"
    return str(p.invariants.get("counts", {}).get(kind, 0))


def load_table(verdicts: list[StorageVerdict]) -> Table:
    """One row per storage and client count: attempts by outcome, the
    operations that raised errors, then violations by kind."""
    header = ["storage", "clients", "attempts", "ok", "failed", "unknown", "errors"]
    header += list(KINDS) + ["ops/s"]
    rows = []
    for v in verdicts:
        for p in v.points:
            tally = p.invariants.get("tally", {})
            row = [v.storage, str(p.clients)]
            row += [str(tally.get(k, 0)) for k in ("attempts", "ok", "failed")]
            row += [str(tally.get("unknown", 0)), str(sum(p.errors.values()))]
            row += [_cell(p, kind) for kind in KINDS]
            row += [f"{p.ops_per_s:.1f}"]
            rows.append(row)
    return Table("contended load: attempts, errors and violations", header, rows)


def scenario_table(verdicts: list[StorageVerdict]) -> Table:
    names = list(dict.fromkeys(s.name for v in verdicts for s in v.scenarios))
    rows = []
    for v in verdicts:
        verdict = {s.name: s.verdict for s in v.scenarios}
        rows.append([v.storage] + [verdict.get(n, "-") for n in names])
    return Table("deterministic scenarios", ["storage", *names], rows)


def summary_table(verdicts: list[StorageVerdict]) -> Table:
    """The last word: per storage, its verdict and why."""
    rows = [[v.storage, *v.verdict()] for v in verdicts]
    return Table("verdict", ["storage", "verdict", "why"], rows)


def text(verdicts: list[StorageVerdict]) -> str:
    parts = []
    if any(v.scenarios for v in verdicts):
        parts.append(scenario_table(verdicts).text())
    parts.append(load_table(verdicts).text())
    lines = []
    for v in verdicts:
        for s in v.scenarios:
            if s.verdict != "ok":
                lines.append(f"{v.storage}: {s.name}: {s.verdict}: {s.detail}")
        for p in v.points:
            where = f"{v.storage}, {plural(p.clients, 'client')}"
            lines.append(f"{where}: {p.invariants['summary']}")
            if p.invariants.get("what"):
                lines.append(f"  {p.invariants['what']}")
            lines += [f"  {problem}" for problem in p.invariants.get("problems", ())]
            if p.errors or p.failed:
                raised = ", ".join(f"{n} {k}" for k, n in sorted(p.errors.items()))
                failed = f"{p.failed} ran out of retries" if p.failed else ""
                said = "; ".join(x for x in (raised, failed) if x)
                lines.append(f"  operations that failed: {said}")
                lines += [f"  {note}" for note in p.notes if note.startswith("first ")]
    if lines:
        parts.append("\n".join(lines))
    parts.append(summary_table(verdicts).text())
    return "\n\n".join(parts) + "\n"


def to_json(verdicts: list[StorageVerdict], metadata: dict[str, Any]) -> dict[str, Any]:
    return {
        **VERIFY.header(),
        "metadata": metadata,
        "storages": [v.to_json() for v in verdicts],
    }
