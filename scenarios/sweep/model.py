"""A sweep's results: one sample per commit, one point per storage, variant
and transaction size, and the whole sweep as versioned JSON (the SWEEP
format of scenarios.results.files)."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from scenarios.results import schema
from scenarios.results.files import SWEEP
from scenarios.results.model import Cells
from scenarios.results.stats import median_high
from vfab import codec


@dataclasses.dataclass(frozen=True)
class SweepSample:
    """One commit of one trial."""

    wall_s: float
    cpu_s: float
    stores: int | None = None
    bytes_written: int | None = None


@dataclasses.dataclass(frozen=True)
class SweepPoint:
    """Every trial of one storage, variant and transaction size."""

    storage: str
    variant: str
    objects: int
    samples: tuple[SweepSample, ...]

    def per_object_us(self, cpu: bool = False) -> list[float]:
        """Wall (or CPU) microseconds per object of each trial."""
        return [
            (s.cpu_s if cpu else s.wall_s) * 1e6 / self.objects for s in self.samples
        ]

    @property
    def stores(self) -> int | None:
        return median_high(s.stores for s in self.samples)


@dataclasses.dataclass(frozen=True)
class SweepRun(schema.Stored):
    """A whole sweep: metadata and every point, in run order."""

    FORMAT = SWEEP
    WHAT = "sweep result"

    kind: ClassVar[str] = "sweep"

    metadata: dict[str, Any]
    #: "results" in the file, as a run file's rows
    points: tuple[SweepPoint, ...] = dataclasses.field(metadata={codec.KEY: "results"})

    def cells(self, cpu: bool = False) -> Cells:
        """Every cell's seconds per object per trial; a row is a
        transaction size, a column a storage and variant."""
        return {
            (p.storage, p.variant, f"{p.objects:,} objects/txn"): tuple(
                (s.cpu_s if cpu else s.wall_s) / p.objects for s in p.samples
            )
            for p in self.points
        }

    def identity(self) -> dict[str, Any]:
        """What two sweeps must share to be compared: the data set's seed."""
        return {"seed": self.metadata.get("config", {}).get("seed")}

    @property
    def columns(self) -> list[tuple[str, str]]:
        """(storage, variant) pairs in run order."""
        return list(dict.fromkeys((p.storage, p.variant) for p in self.points))

    @property
    def sizes(self) -> list[int]:
        return sorted({p.objects for p in self.points})

    def get(self, storage: str, variant: str, objects: int) -> SweepPoint | None:
        for p in self.points:
            if (p.storage, p.variant, p.objects) == (storage, variant, objects):
                return p
        return None

    @classmethod
    def schema(cls) -> schema.Object:
        point = schema.of(
            SweepPoint,
            objects=schema.Positive,
            samples=schema.ListOf(schema.of(SweepSample, True), 1),
        )
        return schema.Object(
            {
                "metadata": schema.metadata(schema.CONFIG),
                # a point is found by these (get())
                "results": schema.ListOf(
                    point, 1, unique=("storage", "variant", "objects")
                ),
            },
            required=("results",),
        )

    @classmethod
    def from_json(cls, data: Any) -> SweepRun:
        # The schema asks for the results alone: a file may have no metadata.
        return super().from_json(
            {"metadata": {}, **data} if isinstance(data, dict) else data
        )
