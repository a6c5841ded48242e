"""Results: raw samples plus metadata, as frozen objects and versioned JSON.

Statistics are computed from the raw samples when asked, never stored
alone, so a result file can be re-summarised any way later.

JSON format history (bump SCHEMA_VERSION and add a line on any change;
files of every older version are read through MIGRATIONS; docs/json-format.md
explains the fields of the current version and points here for the history):
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
"""

from __future__ import annotations

import dataclasses
import json
import math
import statistics
from collections.abc import Iterable
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 2

#: A cell whose relative standard deviation exceeds this is marked.
NOISY_RSD = 0.10


class ResultsError(ValueError):
    """A result file that cannot be read (missing, not JSON, wrong version)."""


@dataclasses.dataclass(frozen=True)
class Sample:
    """One timed phase of one trial."""

    wall_s: float
    cpu_s: float
    loads: int | None = None
    stores: int | None = None
    size_before_bytes: int | None = None
    size_after_bytes: int | None = None
    rss_peak_bytes: int | None = None
    cache_hits: int | None = None
    batch_commit_s: float | None = None
    gc_s: float | None = None

    @property
    def size_change_bytes(self) -> int | None:
        """Bytes the storage grew by during the phase (negative: it shrank)."""
        if self.size_before_bytes is None or self.size_after_bytes is None:
            return None
        return self.size_after_bytes - self.size_before_bytes

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class TrialSummary:
    """What one timed trial leaves besides its phases' samples."""

    storage: str
    size: str
    #: Model objects the generator built (users, capabilities, steps...;
    #: BTree nodes and index entries not counted).
    objects: int
    #: Objects per transaction while building (0: one transaction per phase).
    batch: int = 0
    batch_commits: int = 0
    #: Storage size at the end of the run (after pack), or None.
    size_bytes: int | None = None
    #: Peak RSS of this process over the trial's phases.
    rss_peak_bytes: int | None = None
    #: Backend counters at the end of the trial (Store.jar_stats()).
    stats: dict[str, Any] = dataclasses.field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class Stats:
    """Summary of a list of values; rsd is stdev / mean (0 for one value)."""

    n: int
    median: float
    mean: float
    stdev: float
    minimum: float
    maximum: float

    @classmethod
    def of(cls, values: Iterable[float]) -> Stats:
        vs = list(values)
        if not vs:
            raise ValueError("no values")
        return cls(
            n=len(vs),
            median=statistics.median(vs),
            mean=statistics.fmean(vs),
            stdev=statistics.stdev(vs) if len(vs) > 1 else 0.0,
            minimum=min(vs),
            maximum=max(vs),
        )

    @property
    def rsd(self) -> float:
        return self.stdev / self.mean if self.mean > 0 else 0.0

    @property
    def noisy(self) -> bool:
        return self.rsd > NOISY_RSD and not math.isclose(self.stdev, 0.0)


@dataclasses.dataclass(frozen=True)
class PhaseResult:
    """All trials of one phase on one storage at one size."""

    storage: str
    size: str
    phase: str
    samples: tuple[Sample, ...]

    @property
    def wall(self) -> Stats:
        return Stats.of(s.wall_s for s in self.samples)

    @property
    def cpu(self) -> Stats:
        return Stats.of(s.cpu_s for s in self.samples)

    @property
    def loads(self) -> int | None:
        """Median objects loaded, or None without a database."""
        vals = [s.loads for s in self.samples if s.loads is not None]
        return int(statistics.median(vals)) if vals else None

    @property
    def stores(self) -> int | None:
        return self._median_int("stores")

    def _median_int(self, field: str) -> int | None:
        vals = [getattr(s, field) for s in self.samples]
        vals = [v for v in vals if v is not None]
        return int(statistics.median(vals)) if vals else None

    @property
    def size_change_bytes(self) -> int | None:
        vals = [s.size_change_bytes for s in self.samples]
        known = [v for v in vals if v is not None]
        return int(statistics.median(known)) if known else None

    @property
    def rss_peak_bytes(self) -> int | None:
        """The highest peak RSS of any trial."""
        vals = [s.rss_peak_bytes for s in self.samples if s.rss_peak_bytes]
        return max(vals) if vals else None

    @property
    def cache_hits(self) -> int | None:
        return self._median_int("cache_hits")

    @property
    def batch_commit(self) -> Stats | None:
        return self._stats("batch_commit_s")

    @property
    def gc(self) -> Stats | None:
        return self._stats("gc_s")

    def _stats(self, field: str) -> Stats | None:
        vals = [getattr(s, field) for s in self.samples]
        known = [v for v in vals if v is not None]
        return Stats.of(known) if known else None

    def to_json(self) -> dict[str, Any]:
        return {
            "storage": self.storage,
            "size": self.size,
            "phase": self.phase,
            "samples": [s.to_json() for s in self.samples],
        }


@dataclasses.dataclass(frozen=True)
class RunResult:
    """One run: its metadata, every phase result and every timed trial's
    summary, in run order."""

    metadata: dict[str, Any]
    results: tuple[PhaseResult, ...]
    trials: tuple[TrialSummary, ...] = ()

    @property
    def storages(self) -> list[str]:
        return list(dict.fromkeys(r.storage for r in self.results))

    @property
    def phases(self) -> list[str]:
        return list(dict.fromkeys(r.phase for r in self.results))

    @property
    def sizes(self) -> list[str]:
        return list(dict.fromkeys(r.size for r in self.results))

    def get(
        self, storage: str, phase: str, size: str | None = None
    ) -> PhaseResult | None:
        for r in self.results:
            if r.storage == storage and r.phase == phase and size in (None, r.size):
                return r
        return None

    def trials_of(self, storage: str, size: str | None = None) -> list[TrialSummary]:
        return [
            t for t in self.trials if t.storage == storage and size in (None, t.size)
        ]

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "metadata": self.metadata,
            "results": [r.to_json() for r in self.results],
            "trials": [t.to_json() for t in self.trials],
        }

    def dump(self, path: Path) -> None:
        """Write to *path*, which must not exist (checked by the caller before
        the run; re-checked here so a result never replaces a file)."""
        with open(path, "x", encoding="utf-8") as f:
            json.dump(self.to_json(), f, indent=1, sort_keys=False)
            f.write("\n")

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunResult:
        data = migrate(data)
        try:
            results = tuple(
                PhaseResult(
                    storage=r["storage"],
                    size=r["size"],
                    phase=r["phase"],
                    samples=tuple(Sample(**s) for s in r["samples"]),
                )
                for r in data["results"]
            )
            trials = tuple(TrialSummary(**t) for t in data["trials"])
        except (KeyError, TypeError) as e:
            raise ResultsError(f"malformed result file: {e}") from None
        return cls(metadata=data.get("metadata", {}), results=results, trials=trials)

    @classmethod
    def load(cls, path: Path) -> RunResult:
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
        except OSError as e:
            raise ResultsError(f"cannot read {path}: {e.strerror}") from None
        except json.JSONDecodeError as e:
            raise ResultsError(f"{path} is not JSON: {e}") from None
        return cls.from_json(data)


def _v1_to_v2(data: dict[str, Any]) -> dict[str, Any]:
    # Version 2 only added fields: a version-1 sample reads with the new
    # ones null (the Sample defaults), and there are no trial summaries.
    return {**data, "schema_version": 2, "trials": []}


#: version -> function turning a file of that version into the next one.
MIGRATIONS = {1: _v1_to_v2}


def migrate(data: Any) -> dict[str, Any]:
    """*data* (a parsed result file of any version this suite knows) in the
    current format."""
    version = data.get("schema_version") if isinstance(data, dict) else None
    if version == SCHEMA_VERSION:
        return data  # type: ignore[no-any-return]
    if version not in MIGRATIONS:
        known = ", ".join(str(v) for v in (*MIGRATIONS, SCHEMA_VERSION))
        raise ResultsError(
            f"unsupported schema_version {version!r} (this suite reads {known})"
        )
    while version != SCHEMA_VERSION:
        data = MIGRATIONS[version](data)
        version = data["schema_version"]
    return data  # type: ignore[no-any-return]
