"""The run files of a trend: found in the directories named, read once,
and put in order by the version of a package each run recorded in its
metadata (PEP 440: 6.10 after 6.9), then by date; or by date alone.
"""

from __future__ import annotations

import dataclasses
import datetime
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from packaging.version import Version

from scenarios.results.files import ResultsError
from scenarios.results.kinds import Found, sniff
from scenarios.results.model import RunResult

DEFAULT_BY = "ZODB"
#: --by values that are not package names.
BY_DATE = "date"
BY_PYTHON = "python"


@dataclasses.dataclass(frozen=True)
class Point:
    """One run in the trend: its file, its result, the version it is
    ordered by (None: by date) and its label on the x axis."""

    path: Path
    run: RunResult
    version: str | None
    date: str
    label: str = ""
    #: Other recorded versions that differ from the previous run's,
    #: "ZEO 6.1 -> 6.2".
    changed: tuple[str, ...] = ()
    #: What compare checks two such files share (their kind's identity()).
    identity: Identity = dataclasses.field(default_factory=dict)

    @property
    def when(self) -> str:
        """The run's date as "2026-11-25 06:14:06" (UTC), or "?"."""
        if not self.date:
            return "?"
        date = _date_key(self.date)
        if date.year == 1:
            return self.date
        return date.astimezone(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")

    @property
    def trials(self) -> int:
        return max((len(r.samples) for r in self.run.results), default=0)


#: What two files must share to be compared (compare's check_same over
#: their kind's identity(): a run's data set, a matrix's payload), with
#: their kind: a trend marks no step compare would refuse.
Identity = dict[str, Any]

#: How a file of another kind reads as a run's rows (a matrix's cells:
#: MatrixRun.as_run), by kind: its data -> a RunResult and its identity.
#: Supplied by the caller (scenarios.registry.AS_RUN), so trend imports
#: no other command.
AsRun = Mapping[str, Callable[[Any], tuple[RunResult, Identity]]]

#: A file read: its path, its rows as a run's, its identity.
Read = tuple[Path, RunResult, Identity]


def read_runs(
    inputs: Sequence[Found],
    as_run: AsRun | None = None,
) -> tuple[list[Read], list[str]]:
    """The run files named or found in the directories named (their *.json,
    by name), each sniffed once, and the files of the kinds *as_run* reads
    as runs; and the files of another kind found in a directory, left out.
    A file named on its own must be one of those; any malformed file is a
    ResultsError naming it."""
    as_run = as_run or {}
    found: list[Read] = []
    skipped: list[str] = []
    for source in inputs:
        if source.path.is_dir():
            names = sorted(p for p in _listing(source.path) if p.is_file())
            for path in names:
                run = _read(sniff(path), True, as_run)
                if isinstance(run, str):
                    skipped.append(f"{path} ({run})")
                else:
                    found.append((path, *run))
            continue
        run = _read(source, False, as_run)
        assert not isinstance(run, str)
        found.append((source.path, *run))
    return found, skipped


def _listing(directory: Path) -> list[Path]:
    """The *.json of *directory*; ResultsError when it cannot be read
    (glob() would find nothing and say nothing)."""
    try:
        names = os.listdir(directory)
    except OSError as e:
        raise ResultsError(f"cannot read directory {directory}: {e.strerror}") from None
    return [directory / n for n in names if n.endswith(".json")]


def _read(
    found: Found, in_directory: bool, as_run: AsRun
) -> tuple[RunResult, Identity] | str:
    """The run file *found*; in a directory, a file of another kind gives
    what it is instead."""
    path = found.path
    if found.kind is None:
        if in_directory:  # pytest-benchmark's JSON beside a release's runs
            return "not a vfab-bench result"
        raise ResultsError(
            f"{path} is not a vfab-bench result (no kind, no schema_version)"
        )
    if found.kind in as_run:
        try:
            return as_run[found.kind](found.data)
        except ResultsError as e:
            raise ResultsError(f"{path}: {e}") from None
    if found.kind != "run":
        if in_directory:
            return f"a {found.kind} file"
        raise ResultsError(
            f"{path} is a {found.kind} file, not a run file (vfab-bench run --json)"
        )
    try:
        run = RunResult.from_json(found.data)
    except ResultsError as e:
        raise ResultsError(f"{path}: {e}") from None
    return run, run_identity(run)


def run_identity(run: RunResult) -> Identity:
    """A run file's identity (what compare checks: its data set)."""
    return {"kind": "run", **run.identity()}


def run_read(path: Path, run: RunResult) -> Read:
    """The run file at *path*, read: with its identity."""
    return path, run, run_identity(run)


def _normal(name: str) -> str:
    """A distribution name as PEP 503 compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


def recorded_version(run: RunResult, by: str) -> str | None:
    """The version of *by* (a package, or "python") the run recorded."""
    meta = run.metadata
    if _normal(by) == BY_PYTHON:
        return (meta.get("python") or {}).get("version")
    versions = meta.get("versions") or {}
    for name, version in versions.items():
        if _normal(name) == _normal(by):
            return version
    return None


def _date_key(text: str) -> datetime.datetime:
    """A run's ISO 8601 date (naive: UTC); the earliest date when it is not
    one, so that such runs come first rather than fail."""
    if text.endswith("Z"):  # Python 3.10's fromisoformat does not read it
        text = text[:-1] + "+00:00"
    try:
        date = datetime.datetime.fromisoformat(text)
    except ValueError:
        return datetime.datetime.min.replace(tzinfo=datetime.timezone.utc)
    if date.tzinfo is None:
        date = date.replace(tzinfo=datetime.timezone.utc)
    return date


def order(runs: Iterable[Read], by: str) -> list[Point]:
    """*runs* as points in the order of the version of *by* (then date), or
    of date alone (*by* "date"), labelled for the x axis."""
    points = []
    for path, run, identity in runs:
        date = str(run.metadata.get("date") or "")
        version = None
        if by != BY_DATE:
            version = recorded_version(run, by)
            if version is None:
                recorded = sorted(run.metadata.get("versions") or {})
                raise ResultsError(
                    f"{path} records no version of {by} (it records: "
                    f"{', '.join(recorded) or 'none'}, and python; or use --by date)"
                )
            _check_version(path, by, version)
        points.append(Point(path, run, version, date, identity=identity))
    points.sort(
        key=lambda p: (
            Version(p.version) if p.version is not None else Version("0"),
            _date_key(p.date),
            str(p.path),
        )
    )
    return _labelled(points, by)


#: The longest version text read: PEP 440 puts no bound on a release
#: segment, and int() refuses more than 4,300 digits (ValueError).
MAX_VERSION = 100


def _check_version(path: Path, by: str, version: Any) -> None:
    """ResultsError, one line, unless *version* is a PEP 440 version."""
    if not isinstance(version, str) or len(version) > MAX_VERSION:
        raise ResultsError(
            f"{path}: {by} version {shown_value(version)} is not a version "
            f"(PEP 440, at most {MAX_VERSION} characters)"
        )
    try:
        Version(version)
    except ValueError:  # InvalidVersion, or a number int() will not read
        raise ResultsError(
            f"{path}: {by} version {version!r} is not a version (PEP 440)"
        ) from None


def shown_value(value: Any) -> str:
    """*value* as a line may show it: its repr, cut to 40 characters."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _labelled(points: list[Point], by: str) -> list[Point]:
    """Labels ("ZODB 6.4", or the date; a version met twice gets its date
    too) and what else changed since the previous run."""
    seen: dict[str | None, int] = {}
    for p in points:
        seen[p.version] = seen.get(p.version, 0) + 1
    out = []
    previous: dict[str, Any] = {}
    for p in points:
        if p.version is None:
            label = p.when if p.date else p.path.name
        else:
            label = f"{by} {p.version}"
            if seen[p.version] > 1:
                label += f" ({p.when if p.date else p.path.name})"
        versions = dict(p.run.metadata.get("versions") or {})
        python = (p.run.metadata.get("python") or {}).get("version")
        if python:
            versions["python"] = python
        changed = tuple(
            f"{name} {previous.get(name)} -> {v}"
            for name, v in versions.items()
            if previous and _normal(name) != _normal(by) and previous.get(name) != v
        )
        previous = versions
        out.append(dataclasses.replace(p, label=label, changed=changed))
    return out
