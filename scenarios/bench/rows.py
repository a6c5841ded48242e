"""The report model: each row knows its group (the 2000 rows; a query in its
cache states; update and pack), its label and whether it builds the data
set; every view takes its rows from here (the phases: bench/phases.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from scenarios.bench.phases import CACHE_STATES, PHASES_2000, QUERIES

GROUP_2000 = "The 2000 rows"
GROUP_REST = "Update and pack"


@dataclasses.dataclass(frozen=True)
class Row:
    """One phase as the report shows it."""

    phase: str
    group: str
    #: The row's name inside its group's chart ("brute-force, cold").
    label: str
    #: Building or committing the data set: the sum of these rows over the
    #: objects built is the run's cost per object.
    builds: bool = False
    in_2000: bool = False


def _query_group(base: str) -> str:
    return f"{base}: cold, warm and hot; indexed against brute-force"


def _known() -> dict[str, Row]:
    queries = {base for base, _, _ in QUERIES}
    out = {
        p.name: Row(p.name, GROUP_2000, p.name, p.name not in queries, True)
        for p in PHASES_2000
    }
    for base, _, _ in QUERIES:
        for form, how in (("", "brute-force"), (", indexed", "indexed")):
            for state, _ in CACHE_STATES:
                name = f"{base}{form} ({state})"
                out[name] = Row(name, _query_group(base), f"{how}, {state}")
    return out


KNOWN: dict[str, Row] = _known()

#: The build rows, in the 2000 table's order.
BUILD_PHASES: tuple[str, ...] = tuple(r.phase for r in KNOWN.values() if r.builds)


def row(phase: str) -> Row:
    """The row of *phase*; a phase this suite does not list (a newer file's)
    goes with update and pack."""
    return KNOWN.get(phase) or Row(phase, GROUP_REST, phase)


def groups(phases: Iterable[str]) -> list[tuple[str, list[Row]]]:
    """(group, its rows) for *phases*, groups in the order of the first
    phase of each in the report (the 2000 rows first)."""
    rows = [row(p) for p in phases]
    order = list(dict.fromkeys(r.group for r in sorted(rows, key=_rank)))
    return [(g, [r for r in rows if r.group == g]) for g in order]


def _rank(r: Row) -> int:
    if r.group == GROUP_2000:
        return 0
    return 2 if r.group == GROUP_REST else 1
