"""Versioned JSON files: the one reader (read_json), each kind's Format (its
version and migrations), with the format history as a comment above each.

A file's fields are its model's dataclasses (the schema is derived from
them: schema.of); docs/json-format.md says what they mean.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import re
import stat
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

Migration = Callable[[dict[str, Any]], dict[str, Any]]
T = TypeVar("T")


class ResultsError(ValueError):
    """A result file that cannot be read (missing, not JSON, wrong version)."""


def read_json(path: Path) -> Any:
    """The JSON at *path*; ResultsError in one line when it cannot be read
    or is not JSON."""
    try:
        # Without O_NONBLOCK, opening a FIFO nobody writes waits for ever.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as e:
        raise ResultsError(f"cannot read {path}: {e.strerror}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise ResultsError(f"cannot read {path}: {_not_a_file(mode)}")
        os.set_blocking(fd, True)
        with open(fd, encoding="utf-8", closefd=False) as f:
            text = f.read()
        depth = nesting(text)
        if depth > MAX_DEPTH:
            raise ResultsError(
                f"{path} is nested {depth:,} levels deep; no result is nested "
                f"more than {MAX_DEPTH}"
            )
        return json.loads(text)
    except ResultsError:
        raise
    except OSError as e:
        raise ResultsError(f"cannot read {path}: {e.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ResultsError(f"{path} is not JSON: {e}") from None
    except ValueError as e:  # an integer of more digits than Python converts
        raise ResultsError(f"{path} is not a result: {e}") from None
    except RecursionError:
        raise ResultsError(f"{path}: nested too deeply to be a result") from None
    finally:
        os.close(fd)


#: The deepest nesting of arrays and objects a result file may have (theirs
#: is under 10).  json's parser recurses in C once per level, and under a
#: small stack limit (ulimit -s 128) a few hundred levels crash the
#: process before Python's recursion limit is reached: deeper files are
#: refused before they are parsed.
MAX_DEPTH = 100

_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def nesting(text: str) -> int:
    """How deep the arrays and objects of JSON *text* nest (brackets in
    strings left out; 0 for a scalar), in linear time and constant stack."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    return max(itertools.accumulate(map(_STEP.__getitem__, brackets)), default=0)


def _not_a_file(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "it is a directory"
    if stat.S_ISFIFO(mode):
        return "it is a FIFO, not a regular file"
    if stat.S_ISSOCK(mode):
        return "it is a socket, not a regular file"
    return "it is a device, not a regular file"


@dataclasses.dataclass(frozen=True)
class Format:
    """One kind of file: its "kind" (None: run results, which have none),
    its current version, and version -> function turning a file of that
    version into the next one."""

    kind: str | None
    version: int
    migrations: Mapping[int, Migration] = dataclasses.field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.kind or "run"

    def header(self) -> dict[str, Any]:
        """The top-level fields every file of this format starts with."""
        out: dict[str, Any] = {"schema_version": self.version}
        if self.kind is not None:
            out["kind"] = self.kind
        return out

    def migrate(self, data: Any) -> dict[str, Any]:
        """*data* (a parsed file of any version this suite knows) in the
        current format; ResultsError for anything else."""
        if not isinstance(data, dict):
            raise ResultsError(f"not a {self.name} result (not a JSON object)")
        found, version = data.get("kind"), data.get("schema_version")
        if found != self.kind:
            raise ResultsError(
                f"not a {self.name} result (kind {found!r}, schema_version {version!r})"
            )
        if isinstance(version, bool) or not isinstance(version, (int, type(None))):
            # true == 1 and 2.0 == 2 in Python: neither is a version
            got = repr(version)
            got = got if len(got) <= 40 else got[:37] + "..."
            raise ResultsError(f"schema_version: expected a whole number, got {got}")
        if version == self.version:
            return data
        if version is None or version not in self.migrations:
            known = ", ".join(str(v) for v in (*self.migrations, self.version))
            raise ResultsError(
                f"unsupported schema_version {version!r} (this suite reads {known})"
            )
        while version != self.version:
            data = self.migrations[version](data)
            version = data["schema_version"]
        return data

    def read(self, path: Path) -> dict[str, Any]:
        """The file at *path*, parsed, checked and migrated."""
        return self.migrate(read_json(path))


def _run_v1_to_v2(data: dict[str, Any]) -> dict[str, Any]:
    # Version 2 only added fields: a version-1 sample reads with the new
    # ones null (the Sample defaults), and there are no trial summaries.
    return {**data, "schema_version": 2, "trials": []}


# run (run --json; scenarios.results.model.RunResult; no "kind"):
#   1 -- {"schema_version", "metadata", "results": [{"storage", "size",
#        "phase", "samples": [{"wall_s", "cpu_s", "loads", "stores"}]}]};
#        loads and stores are null on the memory storage.
#   2 -- samples gain size_before_bytes, size_after_bytes, rss_peak_bytes
#        (metadata "rss": per-phase or since-start), cache_hits,
#        batch_commit_s and gc_s, each null where it does not apply; a
#        top-level "trials" (TrialSummary: one per timed trial, in run
#        order).  A version-1 file reads with those null and no trials.
#        (Same version since issue 13: rows may hold different numbers of
#        samples, the 2000 rows' top-up trials after the full ones.)
RUN = Format(None, 2, {1: _run_v1_to_v2})
# sweep (sweep --json; scenarios.sweep.model.SweepRun):
#   1 -- {"schema_version", "kind", "metadata", "results": [SweepPoint:
#        {"storage", "variant", "objects", "samples": [{"wall_s", "cpu_s",
#        "stores", "bytes_written"}]}]}; a sample times a whole commit.
SWEEP = Format("sweep", 1)
# census (census --json; scenarios.census.model.Census, written only):
#   1 -- {"schema_version", "kind", "source", "storage", "tid", "tid_time",
#        "classes": [{"class", "count", "bytes", "revisions",
#        "old_revisions"}], "objects", "pickle_bytes", "missing",
#        "size_bytes", "directory_bytes", "storage_len", "history", "vfab",
#        "seconds", "warning", "metadata"}.
CENSUS = Format("census", 1)


# scale (scale --json; scenarios.scale.model.ScaleRun):
#   1 -- {"schema_version", "kind", "metadata", "points": [ScalePoint]}; a
#        point's latencies are encoded HdrHistograms (us), "invariants"
#        {"checked", "ok", "summary", "problems"}, "fault" null or a report.
#   2 -- the consistency check (scenarios.checker.consistency): invariants
#        gain "what", "counts", "violations" and "tally"; points gain
#        "arrivals" and "served" (open loop).  A version-1 file reads with
#        "what" saying its check was the older one, and no violations.
#   3 -- each point gains "summary" (ops/s, commits/s, p50-max ms, CPU), for
#        jq and pandas: written, never read back.
#   4 -- each point gains "windows" ([{"hist", "commits"}], the window cut
#        into config "windows" parts: the point's interval); the metadata
#        gains "environment" as a run's.  A version-3 file reads with no
#        windows (compare gives ratios alone).
def _scale_v1_to_v2(data: dict[str, Any]) -> dict[str, Any]:
    # Version 1's check compared acknowledged writes only: no history, no
    # phantom writes, indexes or reads.  Say so rather than invent counts.
    points = []
    for point in data.get("points", []):
        if isinstance(point, dict) and isinstance(point.get("invariants"), dict):
            invariants = {
                "what": "the check of format 1 (acknowledged writes only)",
                "counts": {},
                "tally": {},
                **point["invariants"],
            }
            point = {**point, "invariants": invariants}
        points.append(point)
    return {**data, "schema_version": 2, "points": points}


def _scale_v2_to_v3(data: dict[str, Any]) -> dict[str, Any]:
    # Version 3 only added each point's "summary", which is derived from
    # the rest and never read back: nothing to convert.
    return {**data, "schema_version": 3}


def _scale_v3_to_v4(data: dict[str, Any]) -> dict[str, Any]:
    # No sub-windows were kept: each point has none (no interval).
    points = [
        {**p, "windows": []} if isinstance(p, dict) else p
        for p in data.get("points", [])
    ]
    return {**data, "schema_version": 4, "points": points}


SCALE = Format("scale", 4, {1: _scale_v1_to_v2, 2: _scale_v2_to_v3, 3: _scale_v3_to_v4})
# verify (verify --json; scenarios.verify.report, written only):
#   1 -- {"schema_version", "kind", "metadata", "storages": [{"storage",
#        "ok": true, false (a violation) or null (not all checked),
#        "violations", "scenarios": [{"name", "verdict", "detail"}],
#        "points": [scale points, format 2]}]}.
#   2 -- each storage gains "verdict" ("right", "WRONG", "not fully
#        checked" or "errors": right data, failed operations), "why",
#        "known_bug" (an upstream bug and its doc, or null) and "errors"
#        ({exception class: operations that raised it}); "ok" says what the
#        verdict says (null for errors too; version 1 said false there).
#        Points carry the check of history format 2 ("level", "anomalies",
#        "allowed", "not_checked", "unexplained" in "invariants").
#   3 -- each storage gains "planned_s" and "took_s" (seconds it was
#        planned to take and took) and "steps" ([{"step", "planned_s",
#        "took_s"}]: the scenarios, each point).
VERIFY = Format("verify", 3)
# choose (choose --json; scenarios.choose.model.ChooseRun):
#   1 -- {"schema_version", "kind", "metadata", "candidates": [{"storage",
#        "one_process", "points": [scale points, format 4], "contended":
#        [scale points of verify's load], "size_bytes", "known_bug",
#        "copy": CopyResult or null, "error", "verdict", "why"}]};
#        "verdict" and "why" are derived (written, not read).
CHOOSE = Format("choose", 1)
# counts (run --counts --json; scenarios.counts.model.CountRun):
#   1 -- {"schema_version", "kind", "metadata" (a run's, and "counts":
#        valgrind and strace versions, hash seed, wall_s, the storages
#        "served"), "results": [{"storage", "size", "phase", "samples":
#        [CountSample: "instructions", "server_instructions", "syscalls",
#        "server_syscalls"]}], "trials"}: a sample per counted trial.
COUNTS = Format("counts", 1)


# matrix (matrix --json; scenarios.matrix.model.MatrixRun):
#   1 -- {"schema_version", "kind", "metadata", "results": [MatrixCell:
#        {"storage", "benchmark", "kind", "concurrency", "objects",
#        "transactions", "conflicts", "rounds": [{"wall_s", "clients_s"}]}],
#        "groups": [MatrixGroup: {"storage", "kind", "concurrency", "checked",
#        "problems", "error", "cleared", "kept", "seconds_s"}]}; a round's
#        wall_s is its slowest client's timed seconds for "transactions"
#        transactions of "objects" objects.
MATRIX = Format("matrix", 1)


# release (DIR/release.json of release --out; scenarios.release.model):
#   0 -- no "schema_version": {"kind", "metadata", "shortened", "parts":
#        [{"name", "title", "status", "detail", "files"}], "verdicts",
#        "exit_status"}; parts table, micro, scale, million.
#   1 -- "schema_version": 1; metadata gains "python", "host",
#        "environment", "command" and "fail_above"; a part "counts"
#        (counts.json, counts-micro.json); "against": null or {"directory",
#        "verdict"}.  A version-0 directory reads with no counts, no verdict.
def _release_v0_to_v1(data: dict[str, Any]) -> dict[str, Any]:
    # Version 0 had no counts part and compared with nothing.
    return {**data, "schema_version": 1, "against": None}


RELEASE = Format("release", 1, {0: _release_v0_to_v1})


def load(path: Path, from_json: Callable[[Any], T]) -> T:
    """The result file at *path*, built by *from_json*; ResultsError naming
    the file (and the field) when it is not one."""
    data = read_json(path)
    try:
        return from_json(data)
    except ResultsError as e:
        raise ResultsError(f"{path}: {e}") from None
