"""`vfab-bench verify`'s text and its JSON (format VERIFY in
scenarios.results.files).  The text puts the verdict first, a storage a
row, its why left-aligned and wrapped within WIDTH; then the scenarios'
and the load's tables; then, with --all, what each point's check found;
then the time the run took against its plan.  A storage WRONG by a known
upstream bug is named so on every line that shows it."""

from __future__ import annotations

import textwrap
from typing import Any

from scenarios.checker import words
from scenarios.checker.known_bugs import KNOWN_WRONG
from scenarios.progress import duration
from scenarios.results.files import VERIFY
from scenarios.results.formatter import plural
from scenarios.results.table import WIDTH, Table
from scenarios.verify.runner import StorageVerdict

#: What a cell or a line that shows the known bug says of it (the verdict
#: names the bug in full).
KNOWN = "known upstream bug"


def _violations(v: StorageVerdict, p: Any) -> str:
    if not p.check.checked:
        return "-"
    n = sum(p.check.counts.values())
    return f"{n} ({KNOWN})" if n and v.known_bug() else str(n)


def load_table(verdicts: list[StorageVerdict]) -> Table:
    """One row per storage and client count: attempts by outcome (a
    conflict retried apart from an attempt that failed, as scale's table
    says them), the operations that raised, the violations (by kind in the
    verdict and in --all), ops/s."""
    header = ["storage", "clients", "attempts", "ok", "retried", "failed"]
    header += ["unknown", "errors", "violations", "ops/s"]
    rows = []
    for v in verdicts:
        for p in v.points:
            tally = p.check.tally
            retried = tally.get("retried", 0)
            row = [v.storage, str(p.clients)]
            row += [str(tally.get(k, 0)) for k in ("attempts", "ok")]
            row += [str(retried), str(tally.get("failed", 0) - retried)]
            row += [str(tally.get("unknown", 0)), str(sum(p.errors.values()))]
            row += [_violations(v, p), f"{p.ops_per_s:.1f}"]
            rows.append(row)
    return Table("contended load: attempts, errors and violations", header, rows)


def scenario_table(verdicts: list[StorageVerdict]) -> Table:
    """A storage a row, a scenario a column (wrapped by column groups)."""
    names = list(dict.fromkeys(s.name for v in verdicts for s in v.scenarios))
    rows = []
    for v in verdicts:
        verdict = {s.name: s.verdict for s in v.scenarios}
        bug = v.known_bug() is not None
        rows.append(
            [v.storage]
            + [
                f"{verdict[n]} ({KNOWN})"
                if bug and verdict.get(n) == "violation"
                else verdict.get(n, "-")
                for n in names
            ]
        )
    return Table("deterministic scenarios", ["storage", *names], rows)


def verdict_lines(verdicts: list[StorageVerdict]) -> list[str]:
    """ "verdict", then a storage a row: its name, its state and why, the
    why wrapped under itself (left-aligned, within WIDTH)."""
    width = max(len(v.storage) for v in verdicts)
    lines = ["verdict"]
    for v in verdicts:
        word, why = v.verdict()
        state = v.state()
        head = f"  {v.storage.ljust(width)}  "
        lines += textwrap.wrap(
            f"{state}: {why}",
            WIDTH,
            initial_indent=head,
            subsequent_indent=" " * len(head),
            break_on_hyphens=False,
        )
    return lines


def detail_lines(verdicts: list[StorageVerdict]) -> list[str]:
    """What each scenario that was not ok and each point's check found."""
    lines: list[str] = []

    def add(text: str, indent: str = "") -> None:
        lines.extend(
            textwrap.wrap(
                text,
                WIDTH,
                initial_indent=indent,
                subsequent_indent=indent + "  ",
                break_on_hyphens=False,
            )
        )

    for v in verdicts:
        bug = f" ({KNOWN}: see the verdict)" if v.known_bug() else ""
        for s in v.scenarios:
            if s.verdict != "ok":
                extra = bug if s.verdict == "violation" else ""
                add(f"{v.storage}: {s.name}: {s.verdict}{extra}: {s.detail}")
        for p in v.points:
            where = f"{v.storage}, {plural(p.clients, 'client')}"
            line = words.said(p.check, v.storage)
            if bug and p.check.ok is False:
                # named first: the line is long and wraps
                line = line.replace("WRONG:", f"WRONG{bug}:", 1)
            add(f"{where}: {line}")
            for line in p.check.details():
                add(line, "  ")
            if p.errors or p.failed:
                raised = ", ".join(f"{n} {k}" for k, n in sorted(p.errors.items()))
                failed = f"{p.failed} ran out of retries" if p.failed else ""
                said = "; ".join(x for x in (raised, failed) if x)
                add(f"operations that failed: {said}", "  ")
                for note in p.notes:
                    if note.startswith("first "):
                        add(note, "  ")
    return lines


def took_line(verdicts: list[StorageVerdict]) -> str:
    """The time the run took against its plan, in all and per storage."""
    planned = sum(v.planned_s for v in verdicts)
    took = sum(v.took_s for v in verdicts)
    if not planned:
        return ""
    each = ", ".join(
        f"{v.storage} {duration(v.took_s)} of {duration(v.planned_s)}" for v in verdicts
    )
    return textwrap.fill(
        f"verify took {duration(took)} of {duration(planned)} planned "
        f"({took / planned:.2f}x): {each}",
        WIDTH,
        subsequent_indent="  ",
        break_on_hyphens=False,
    )


def text(verdicts: list[StorageVerdict], detail: bool = False) -> str:
    """The verdict first, then the tables; with *detail* (--all) what each
    point's check found; then the time against the plan."""
    parts = ["\n".join(verdict_lines(verdicts))]
    if any(v.scenarios for v in verdicts):
        parts.append(scenario_table(verdicts).text())
    parts.append(load_table(verdicts).text())
    lines = detail_lines(verdicts)
    if detail and lines:
        parts.append("\n".join(lines))
    elif lines:
        parts.append("What each point's check found: --all (and --json FILE).")
    took = took_line(verdicts)
    if took:
        parts.append(took)
    return "\n\n".join(parts) + "\n"


def to_json(verdicts: list[StorageVerdict], metadata: dict[str, Any]) -> dict[str, Any]:
    return {
        **VERIFY.header(),
        "metadata": metadata,
        "storages": [v.to_json() for v in verdicts],
    }


__all__ = ["KNOWN_WRONG", "load_table", "scenario_table", "text", "to_json"]
