"""What choose measured: a Candidate per storage (scale's points on the
mix, or a --from copy: CopyResult), its size on disk, and ChooseRun, the
run's JSON (kind "choose": CHOOSE in files.py, with its history).  Plain
dataclasses: the codec builds them from ChooseRun's file.  Figures come
from raw values (histograms, sub-windows) when a view asks, as
everywhere."""

from __future__ import annotations

import dataclasses
from typing import Any

from scenarios.checker.known_bugs import KNOWN_WRONG
from scenarios.clients import histogram
from scenarios.results import schema
from scenarios.results.files import CHOOSE
from scenarios.results.formatter import plural
from scenarios.results.schema import ListOf, Optional
from scenarios.scale.model import ScalePoint, ScaleRun
from scenarios.verify.runner import RIGHT, UNCHECKED, WRONG, StorageVerdict
from vfab.codec import encode


@dataclasses.dataclass(frozen=True)
class SizeBucket:
    """Transactions of up to *records* records (a power of two) copied:
    how many, and an encoded HdrHistogram of their latencies (us)."""

    records: int
    transactions: int
    hist: str


@dataclasses.dataclass(frozen=True)
class ReadPoint:
    """Loads by oid at *clients* concurrent readers, *cold* (a storage
    just opened) or warm (the same draws again): loads done, seconds, an
    encoded HdrHistogram of their latencies (us), and the loads that
    found no record."""

    clients: int
    cold: bool
    loads: int
    seconds_s: float
    hist: str
    #: loads of an oid the target had lost (a WRONG storage's)
    missing: int = 0

    @property
    def loads_per_s(self) -> float:
        return self.loads / self.seconds_s if self.seconds_s else 0.0


@dataclasses.dataclass(frozen=True)
class CopyResult:
    """A --from copy into one candidate: transactions and records copied
    and their seconds (each transaction timed alone), latency by
    transaction size, the comparison with the source (*checked*: objects'
    latest states; *revisions_checked*: earlier revisions, where the
    target keeps history; records lost or changed among them, the first
    few named), and the reads."""

    transactions: int
    records: int
    bytes: int
    copy_s: float
    by_size: tuple[SizeBucket, ...]
    checked: int
    revisions_checked: int
    keeps_history: bool
    lost: int
    changed: int
    examples: tuple[str, ...]
    reads: tuple[ReadPoint, ...] = ()

    @property
    def transactions_per_s(self) -> float:
        return self.transactions / self.copy_s if self.copy_s else 0.0

    @property
    def wrong(self) -> bool:
        return bool(self.lost or self.changed)

    def latency_ms(self, quantile: str = "p99") -> float:
        merged = histogram.merged(b.hist for b in self.by_size)
        return float(histogram.summary_ms(merged)[quantile])


@dataclasses.dataclass(frozen=True)
class Candidate:
    """One storage as choose measured it."""

    storage: str
    one_process: bool
    points: tuple[ScalePoint, ...] = ()
    #: verify's contended load at the highest client count (shared
    #: storages): checked, not drawn
    contended: tuple[ScalePoint, ...] = ()
    size_bytes: int | None = None
    #: the known upstream bug of this storage's installed version, or None
    known_bug: str | None = None
    copy: CopyResult | None = None
    #: why it could not be measured (one line), None when it was
    error: str | None = None

    def verdict(self) -> tuple[str, str]:
        """(right, WRONG, not fully checked or errors; why, in words)."""
        if self.error is not None:
            return UNCHECKED, self.error
        if self.copy is not None and self.copy.wrong:
            return WRONG, copy_wrong(self.copy)
        if self.points:
            checked = self.points + self.contended
            return StorageVerdict(self.storage, (), checked).verdict()
        if self.copy is not None:
            what = plural(self.copy.checked, "object")
            if self.copy.keeps_history:
                earlier = plural(self.copy.revisions_checked, "earlier revision")
                what = f"{what} and {earlier}"
            else:
                what += " (no history kept)"
            return RIGHT, f"{what} checked, none lost or changed"
        return UNCHECKED, "nothing measured"

    @property
    def right(self) -> bool:
        return self.verdict()[0] == RIGHT

    @property
    def recommendable(self) -> bool:
        """Right, and no known upstream bug in the installed version: a
        known bug that did not show in this run's windows still shows now
        and then (scenarios.checker.known_bugs)."""
        return self.right and self.known_bug is None

    def state(self) -> str:
        """The verdict's word; KNOWN_WRONG when a known upstream bug
        explains a WRONG (scenarios.checker.known_bugs)."""
        word = self.verdict()[0]
        return KNOWN_WRONG if word == WRONG and self.known_bug else word

    def to_json(self) -> dict[str, Any]:
        word, why = self.verdict()
        return {**encode(self), "verdict": word, "why": why}


def copy_wrong(copy: CopyResult) -> str:
    parts = []
    if copy.lost:
        parts.append(plural(copy.lost, "record") + " lost")
    if copy.changed:
        parts.append(plural(copy.changed, "record") + " changed")
    shown = "; ".join(copy.examples[:3])
    checked = copy.checked + copy.revisions_checked
    return (
        ", ".join(parts) + f" of {checked:,} checked" + (f" ({shown})" if shown else "")
    )


def _point_schema() -> schema.Kind:
    points = ScaleRun.schema().fields["points"]
    assert isinstance(points, ListOf)
    return points.kind


@dataclasses.dataclass(frozen=True)
class ChooseRun(schema.Stored):
    """Every candidate of one choose run, with the run's metadata."""

    FORMAT = CHOOSE
    WHAT = "choose result"

    metadata: dict[str, Any]
    candidates: tuple[Candidate, ...]

    @property
    def cores(self) -> int | None:
        cores = self.metadata.get("host", {}).get("cpu_count")
        return cores if isinstance(cores, int) else None

    def as_scale(self) -> ScaleRun:
        """The candidates' points as a scale run (scale's charts and
        tables draw them)."""
        points = tuple(p for c in self.candidates for p in c.points)
        return ScaleRun(self.metadata, points)

    def to_json(self) -> dict[str, Any]:
        return {
            **CHOOSE.header(),
            "metadata": self.metadata,
            "candidates": [c.to_json() for c in self.candidates],
        }

    @classmethod
    def schema(cls) -> schema.Object:
        candidate = schema.of(
            Candidate,
            points=ListOf(_point_schema()),
            contended=ListOf(_point_schema()),
            copy=Optional(schema.of(CopyResult)),
            verdict=schema.Text,
            why=schema.Text,
        )
        config = {"seed": Optional(schema.Whole)}
        return schema.of(
            cls, metadata=schema.metadata(config), candidates=ListOf(candidate)
        )
