"""Statistics of raw values: every summary the suite prints comes from here.

Results keep raw samples; these functions summarise them when a table or a
progress line asks, so a saved file can be re-summarised any way later.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Iterable, Iterator

#: A cell whose relative standard deviation exceeds this is marked.
NOISY_RSD = 0.10


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


def known(values: Iterable[float | None]) -> list[float]:
    """*values* without the Nones (a field a storage could not measure)."""
    return [v for v in values if v is not None]


def median(values: Iterable[float | None]) -> float | None:
    """The median of the known values, or None."""
    vs = known(values)
    return statistics.median(vs) if vs else None


def median_int(values: Iterable[float | None]) -> int | None:
    """The median of the known values as a whole number, or None."""
    vs = known(values)
    return int(statistics.median(vs)) if vs else None


def median_high(values: Iterable[int | None]) -> int | None:
    """The upper median of the known values (one of them), or None."""
    vs = [v for v in values if v is not None]
    return statistics.median_high(vs) if vs else None


def percentiles(
    values: list[float], points: tuple[float, ...] = (50, 95, 99)
) -> Iterator[float]:
    """Nearest-rank percentiles of *values* (sorted here), as locust reports
    them; nan for no values."""
    ordered = sorted(values)
    for p in points:
        if not ordered:
            yield float("nan")
            continue
        rank = max(1, math.ceil(len(ordered) * p / 100))
        yield ordered[rank - 1]
