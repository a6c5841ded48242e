"""Versioned JSON files: the one reader and checker for every file the suite
writes (run results, sweep results, census), and their format history.

Every file carries a top-level "schema_version"; sweep and census files also
a "kind".  read() turns a missing file, a file that is not JSON, another
kind or a version this suite cannot read into one ResultsError line; files
of an older version are brought up to date through their format's
migrations.

JSON format history (bump a format's version and add a line on any change;
files of every older version are read through its migrations):

run (vfab-bench run --json; RUN, scenarios.results.model.RunResult):
  1 -- {"schema_version": 1, "metadata": {...}, "results": [{"storage",
       "size", "phase", "samples": [{"wall_s", "cpu_s", "loads",
       "stores"}]}]}; loads and stores are null on the memory storage.
  2 -- samples gain "size_before_bytes", "size_after_bytes" (storage size
       around the phase), "rss_peak_bytes" (this process's peak RSS during
       the phase, or since it started where Linux cannot reset the peak:
       metadata "rss" says which), "cache_hits" (ZEO client cache hits during
       the phase), "batch_commit_s" (wall seconds of the phase spent
       committing full batches, --batch) and "gc_s" (wall seconds of the phase
       spent in Python's cyclic garbage collector); each null where it does
       not apply.
       A top-level "trials": [{"storage", "size", "objects", "batch",
       "batch_commits", "size_bytes", "rss_peak_bytes", "stats"}], one per
       timed trial in run order: model objects built, storage size at the end
       of the run, peak RSS over the trial, backend counters (ZEO: "server"
       is server_status(), "client_cache" the client cache's counters).
       Reading a version-1 file gives null for all of these and no trials.
       (Same version, since issue 13: rows may hold different numbers of
       samples, the 2000 rows' top-up trials after the full ones, and
       "trials" lists only the trials that ran every row.)

sweep (vfab-bench sweep --json; SWEEP, scenarios.sweep.results.SweepRun):
  1 -- {"schema_version": 1, "kind": "sweep", "metadata": {"date",
        "python", "versions", "host", "config": SweepConfig.to_json(),
        "command"}, "results": [{"storage", "variant", "objects": N,
        "samples": [{"wall_s", "cpu_s", "stores", "bytes_written"}]}]};
        wall_s and cpu_s time the whole commit (divide by objects for the
        cost per object); stores and bytes_written are null where the
        storage cannot tell.

census (vfab-bench census --json; CENSUS, scenarios.census.model.Census):
  1 -- {"schema_version": 1, "kind": "census",
        "source": what was opened (path, URI or HOST:PORT),
        "storage": the storage's class, "module.Name",
        "tid": hex id of the transaction the census reads at (null: empty),
        "tid_time": its time, ISO 8601 UTC (null: empty),
        "classes": [{"class": "module.Name", "count": current objects
                     reached from the root, "bytes": their pickle bytes,
                     "revisions": records of this class in the history,
                     "old_revisions": those not current (both null where
                     the storage does not iterate)}, ...] (most bytes first),
        "objects": sum of the counts, "pickle_bytes": sum of the bytes,
        "missing": references to objects the storage does not have,
        "size_bytes": storage.getSize() (FileStorage: Data.fs; ZEO: the
                      server's storage, as the server last reported it),
        "directory_bytes": bytes of the files in the database's directory
                           (Data.fs with its .index, ...; null without one),
        "storage_len": len(storage) (current objects, reached or not),
        "history": {"transactions", "records", "current", "old",
                    "unreachable"} or null where the storage does not
                   iterate or --no-history was given,
        "vfab": the spec a vfab data set records ({"scale", "seed",
                "size"}) or null for any other database,
        "seconds": time the census took,
        "warning": why the view may be stale (a Data.fs another process
                   has open), or null,
        "metadata": {"date", "versions", "command"}}

scale (vfab-bench scale --json; SCALE, scenarios.scale.results.ScaleRun):
  1 -- {"schema_version": 1, "kind": "scale", "metadata": {"date",
        "python", "versions", "host", "config": ScaleConfig.to_json(),
        "command", "load_average": [1, 5, 15 min] before the run,
        "load_average_after": the same after it},
        "points": [{"storage", "clients", "started": clients that started,
        "window_s": the measured window, "rate": offered ops/s over all
        clients (null: closed loop), "hists": {operation: HdrHistogram of
        successful operations' latencies in us, in HdrHistogram's encoded
        (compressed base64) form}, "commits", "conflicts", "failed" (retries
        ran out), "errors": {exception class: count}, "backlog" (open loop:
        arrivals never started), "late_s", "client_cpu_s", "server_cpu_s"
        (null: no server process), "log_records" (warnings the clients'
        ZODB/ZEO logged), "killed_clients", "invariants": {"checked", "ok",
        "summary", "problems"}, "fault": null or {"kind", "at_s",
        "restart_s", "outage_s", "first_commit_after_restart_s",
        "errors_during", "errors_after", ...}, "interrupted", "notes"}]}
  2 -- the consistency check (scenarios.load.consistency): "invariants"
        also has "what" (what was checked, in words), "counts" ({kind:
        violations}), "violations" ([{"kind", "text", "ops", "tids"}], every
        one) and "tally" ({"attempts", "ok", "failed", "unknown", "reads",
        "audits", "prices", "labs", "sequences", "index_entries"}); hists
        include the operations transfer_wafers and audit_stock; a point has
        "arrivals" and "served" (open loop: arrivals inside the window that
        were started, and those that succeeded; 0 where not counted).  A version-1
        file reads with "what" saying its check was the older one, and no
        violation list.
  3 -- each point also has "summary": {"ops", "ops_per_s", "commits_per_s",
        "p50_ms", "p95_ms", "p99_ms", "max_ms" (all operations, from the
        histograms), "client_cpu_s", "server_cpu_s", "cpu_use" (share of
        the host's cores over the window, null when unknown)}, for jq and
        pandas; written, never read back (the histograms stay the source).
        A version-2 file reads the same (its summaries are computed when a
        report asks).  verify's points carry it too.
  4 -- each point also has "windows": [{"hist": the encoded HdrHistogram
        of every successful operation that ended in that sub-window (us),
        "commits"}], the measured window cut into config "windows" equal
        parts: each sub-window's throughput and p99 give the point an
        interval, and compare tests two points window against window.  The
        metadata has "environment" as a run's (load average at the start
        and end, speed probes, busy warnings).  A version-3 file reads with
        no windows (no interval: compare gives ratios alone) and its
        "load_average" and "load_average_after" as its environment.

verify (vfab-bench verify --json; VERIFY, scenarios.verify.report):
  1 -- {"schema_version": 1, "kind": "verify", "metadata": {"date",
        "python", "versions", "host", "config": VerifyConfig.to_json(),
        "command", "load_average", "load_average_after"}, "storages":
        [{"storage", "ok": true, false (a violation) or null (not all
        checked), "violations": {kind: count over the points},
        "scenarios": [{"name", "verdict": "ok", "violation" or "not run",
        "detail"}], "points": [a scale point, format 2]}]}

counts (vfab-bench run --counts --json; COUNTS,
        scenarios.counts.model.CountRun):
  1 -- {"schema_version": 1, "kind": "counts", "metadata": {... as a run's,
        "counts": {"valgrind", "strace" (versions), "hash_seed",
        "wall_s", "served": the storages that talk to a server}},
        "results": [{"storage", "size", "phase", "samples":
        [{"instructions": the client process's instructions in the phase
        (every thread), "server_instructions": a server's the run started
        (runzeo) or null, "syscalls": {"fsync", "read", "write", "seek",
        "send", "recv": the client's I/O system calls in the phase},
        "server_syscalls": the same for the server processes, or null}]}],
        "trials": as a run's, one per counted trial}; a sample per counted
        trial, in run order.  A run file (no "kind") is not a counts file:
        readers tell them apart by "kind" and refuse a mixed pair.

release (release.json of vfab-bench release --out DIR; RELEASE,
         scenarios.release.directory):
  0 -- (no "schema_version") {"kind": "release", "metadata": {"date",
        "versions", "cpu_count", "storages", "quick"}, "shortened": [the
        plan's lines], "parts": [{"name", "title", "status", "detail",
        "files": names in DIR}], "verdicts": [consistency lines],
        "exit_status"}; parts table, micro, scale, million.
  1 -- "schema_version": 1; metadata also has "python", "host",
        "environment" (as a run's: load average, speed probes, warnings),
        "command" and "fail_above"; a part "counts" (counts.json: a count
        file of the 2000 rows; counts-micro.json: pytest-benchmark's JSON of
        the micro-benchmarks under callgrind, "instructions" in each
        benchmark's extra_info); "against": null or {"directory", "verdict":
        the comparison with that release (scenarios.release.verdict)}.  A
        version-0 directory reads with no counts part and no verdict.
"""

from __future__ import annotations

import dataclasses
import json
import os
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
            return json.load(f)
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
        if version == self.version:
            return data
        if not isinstance(version, int) or version not in self.migrations:
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


RUN = Format(None, 2, {1: _run_v1_to_v2})
SWEEP = Format("sweep", 1)
CENSUS = Format("census", 1)


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
VERIFY = Format("verify", 1)
COUNTS = Format("counts", 1)


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


def malformed(what: str, error: Exception) -> ResultsError:
    """The error for a file of the right version whose content is not."""
    return ResultsError(f"malformed {what}: {error}")
