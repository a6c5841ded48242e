"""The result kinds, as storages/registry.py lists the storages: each
kind's format, model and views (a Kind: scenarios/results/kinds.py), and
read(), how report, compare and trend open what they are given: sniffed
and parsed once, its model built by its kind."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scenarios.bench.kind import kind as run_kind
from scenarios.bench.page import Section
from scenarios.census.kind import KIND as CENSUS
from scenarios.choose.kind import KIND as CHOOSE
from scenarios.counts.kind import KIND as COUNTS
from scenarios.matrix.kind import KIND as MATRIX
from scenarios.release.kind import KIND as RELEASE
from scenarios.results.files import ResultsError
from scenarios.results.kinds import Found, Kind, sniff
from scenarios.scale.kind import KIND as SCALE
from scenarios.sweep.kind import KIND as SWEEP
from scenarios.verify.kind import KIND as VERIFY


def _run_sections(args: Any) -> list[Section]:
    """report --sweep FILE and --scale FILE on a run's page: their sections
    (the run kind takes them as arguments, importing neither command)."""
    from scenarios.scale.model import ScaleRun
    from scenarios.scale.page import scale_section
    from scenarios.sweep.model import SweepRun
    from scenarios.sweep.page import sweep_section

    found: list[Section] = []
    if getattr(args, "sweep", None) is not None:
        sweep = SweepRun.load(args.sweep)
        found.append(
            Section("sweep", lambda stat: sweep_section(sweep, stat), sweep.metadata)
        )
    if getattr(args, "scale", None) is not None:
        scale = ScaleRun.load(args.scale)
        found.append(Section("scale", lambda _: scale_section(scale), scale.metadata))
    return found


RUN = run_kind(_run_sections)


def _matrix_as_run(data: Any) -> Any:
    from scenarios.matrix.model import MatrixRun

    matrix = MatrixRun.from_json(data)
    return matrix.as_run(), {"kind": "matrix", **matrix.identity()}


#: The kinds trend reads as runs (scenarios.trend.runs.AsRun): a
#: matrix's cells as a run's rows, its trend.
AS_RUN = {"matrix": _matrix_as_run}

#: name -> kind.
KINDS: dict[str, Kind] = {
    k.name: k
    for k in (RUN, SWEEP, SCALE, COUNTS, CENSUS, VERIFY, RELEASE, MATRIX, CHOOSE)
}


def find(path: Path, command: str = "") -> tuple[Kind, Found]:
    """The kind of *path* and what sniff() found there; ResultsError in one
    line naming *path* when it is no result, or one *command* ("report",
    "compare") does not read."""
    found = sniff(path)
    kind = KINDS.get(found.kind) if found.kind is not None else None
    if kind is None or kind.load is None or (command and not getattr(kind, command)):
        readable = [
            k.plural
            for k in KINDS.values()
            if k.load is not None and (not command or getattr(k, command))
        ]
        what = _what(found.kind, path)
        raise ResultsError(
            f"{path} {what}; {command or 'vfab-bench'} reads {_or(readable)}"
        )
    return kind, found


def load(kind: Kind, found: Found) -> Any:
    """The model of what find() found; ResultsError naming the file."""
    assert kind.load is not None  # find() checked it
    try:
        return kind.load(found)
    except ResultsError as e:
        text, path = str(e), str(found.path)
        raise ResultsError(text if path in text else f"{path}: {text}") from None


def read(path: Path, command: str = "") -> tuple[Kind, Any]:
    """find() and load(): the kind of *path* and its model."""
    kind, found = find(path, command)
    return kind, load(kind, found)


def _what(kind: str | None, path: Path) -> str:
    if kind in KINDS:
        return f"is a {KINDS[kind].noun} (kind {kind!r})"
    if kind is not None:
        return f"is a file of kind {kind!r}"
    if path.is_dir():
        return "is not a release directory (no release.json: release --out writes one)"
    return "is not a vfab-bench result (no kind, no schema_version)"


def _or(items: list[str]) -> str:
    return ", ".join(items[:-1]) + f" or {items[-1]}" if len(items) > 1 else items[0]
