"""The run's results: raw samples plus metadata, frozen, and their versioned
JSON (RUN in files.py); statistics come from the samples when a view
asks, never stored alone.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, ClassVar, Generic, TypeVar

from scenarios.results import schema
from scenarios.results.files import RUN
from scenarios.results.stats import Stats, median_int
from vfab.codec import Json

#: (storage, variant or "", row) -> raw samples, in the file's order: the
#: cells compare and trend test.
Cells = dict[tuple[str, str, str], tuple[float, ...]]


@dataclasses.dataclass(frozen=True)
class Sample(Json):
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


@dataclasses.dataclass(frozen=True)
class TrialSummary(Json):
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


S = TypeVar("S")
V = TypeVar("V")


@dataclasses.dataclass(frozen=True)
class SampleCell(Generic[S]):
    """A cell of samples: every trial of one storage in one row (a phase at
    a size), raw, in run order; what a view shows is computed from them
    when it asks.  A run's cells hold timed samples (PhaseResult), a count
    run's counted ones (scenarios.counts.model.CountResult)."""

    storage: str
    size: str
    phase: str
    samples: tuple[S, ...]

    def values(self, of: Callable[[S], V | None]) -> list[V]:
        """*of* of each trial that has it, in run order."""
        return [v for s in self.samples if (v := of(s)) is not None]

    def row(self, several: bool) -> str:
        """The cell's row: its phase, "phase [size]" among *several* sizes."""
        return f"{self.phase} [{self.size}]" if several else self.phase


@dataclasses.dataclass(frozen=True)
class PhaseResult(Json, SampleCell[Sample]):
    """All timed trials of one phase on one storage at one size."""

    samples: tuple[Sample, ...]

    @property
    def wall_values(self) -> list[float]:
        """Wall seconds of every trial, in run order."""
        return self.values(lambda s: s.wall_s)

    @property
    def cpu_values(self) -> list[float]:
        """CPU seconds of every trial, in run order."""
        return self.values(lambda s: s.cpu_s)

    @property
    def wall(self) -> Stats:
        return Stats.of(self.wall_values)

    @property
    def loads(self) -> int | None:
        """Median objects loaded, or None without a database."""
        return median_int(s.loads for s in self.samples)

    @property
    def stores(self) -> int | None:
        return median_int(s.stores for s in self.samples)

    @property
    def size_change_bytes(self) -> int | None:
        return median_int(s.size_change_bytes for s in self.samples)

    @property
    def rss_peak_bytes(self) -> int | None:
        """The highest peak RSS of any trial."""
        return max(self.values(lambda s: s.rss_peak_bytes or None), default=None)

    @property
    def cache_hits(self) -> int | None:
        return median_int(s.cache_hits for s in self.samples)


#: What a row of results is found by (PhaseRows.get): a file with two
#: rows alike in them is refused.
ROW_KEY = ("storage", "size", "phase")

R = TypeVar("R", bound=SampleCell[Any])


class PhaseRows(Generic[R]):
    """Storages, phases and sizes of *results* in run order, and one result
    by storage, phase and size: what a run and a count run share."""

    results: tuple[R, ...]

    @property
    def storages(self) -> list[str]:
        return list(dict.fromkeys(r.storage for r in self.results))

    @property
    def phases(self) -> list[str]:
        return list(dict.fromkeys(r.phase for r in self.results))

    @property
    def sizes(self) -> list[str]:
        return list(dict.fromkeys(r.size for r in self.results))

    def get(self, storage: str, phase: str, size: str | None = None) -> R | None:
        for r in self.results:
            if r.storage == storage and r.phase == phase and size in (None, r.size):
                return r
        return None


@dataclasses.dataclass(frozen=True)
class RunResult(schema.Stored, PhaseRows[PhaseResult]):
    """One run: its metadata, every phase result and every timed trial's
    summary, in run order."""

    FORMAT = RUN
    WHAT = "result file"

    kind: ClassVar[str] = "run"

    metadata: dict[str, Any]
    results: tuple[PhaseResult, ...]
    trials: tuple[TrialSummary, ...] = ()

    def cells(self, cpu: bool = False) -> Cells:
        """Every cell's wall (or CPU) seconds per trial; a row is a phase,
        "phase [size]" when the run has several sizes."""
        several = len(self.sizes) > 1
        return {
            (r.storage, "", r.row(several)): tuple(
                r.cpu_values if cpu else r.wall_values
            )
            for r in self.results
        }

    def identity(self) -> dict[str, Any]:
        """What two runs must share to be compared: the data set."""
        config = self.metadata.get("config", {})
        return {
            "size": sorted(self.sizes),
            "scale": config.get("scale"),
            "seed": config.get("seed"),
        }

    def trials_of(self, storage: str, size: str | None = None) -> list[TrialSummary]:
        return [
            t for t in self.trials if t.storage == storage and size in (None, t.size)
        ]

    @classmethod
    def schema(cls) -> schema.Object:
        return schema.of(
            cls,
            required=("results", "trials"),
            metadata=schema.metadata(schema.CONFIG),
            results=schema.ListOf(
                schema.of(
                    PhaseResult, samples=schema.ListOf(schema.of(Sample, True), 1)
                ),
                1,
                unique=ROW_KEY,
            ),
            trials=schema.ListOf(schema.of(TrialSummary, True)),
        )
