"""Results: raw samples plus metadata, as frozen objects and versioned JSON.

Statistics are computed from the raw samples when asked, never stored
alone, so a result file can be re-summarised any way later.

JSON format history (bump SCHEMA_VERSION and add a line on any change):
  1 -- {"schema_version": 1, "metadata": {...}, "results": [{"storage",
       "size", "phase", "samples": [{"wall_s", "cpu_s", "loads",
       "stores"}]}]}; loads and stores are null on the memory storage.
"""

from __future__ import annotations

import dataclasses
import json
import math
import statistics
from collections.abc import Iterable
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1

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
        vals = [s.stores for s in self.samples if s.stores is not None]
        return int(statistics.median(vals)) if vals else None

    def to_json(self) -> dict[str, Any]:
        return {
            "storage": self.storage,
            "size": self.size,
            "phase": self.phase,
            "samples": [s.to_json() for s in self.samples],
        }


@dataclasses.dataclass(frozen=True)
class RunResult:
    """One run: its metadata and every phase result, in run order."""

    metadata: dict[str, Any]
    results: tuple[PhaseResult, ...]

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

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "metadata": self.metadata,
            "results": [r.to_json() for r in self.results],
        }

    def dump(self, path: Path) -> None:
        """Write to *path*, which must not exist (checked by the caller before
        the run; re-checked here so a result never replaces a file)."""
        with open(path, "x", encoding="utf-8") as f:
            json.dump(self.to_json(), f, indent=1, sort_keys=False)
            f.write("\n")

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunResult:
        version = data.get("schema_version") if isinstance(data, dict) else None
        if version != SCHEMA_VERSION:
            raise ResultsError(
                f"unsupported schema_version {version!r} (this suite reads "
                f"{SCHEMA_VERSION})"
            )
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
        except (KeyError, TypeError) as e:
            raise ResultsError(f"malformed result file: {e}") from None
        return cls(metadata=data.get("metadata", {}), results=results)

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
