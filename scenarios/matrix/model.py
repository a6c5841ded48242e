"""A matrix's results: a round per client group, a cell per storage,
benchmark, concurrency kind, concurrency and transaction size, each group's
check, and the whole matrix as versioned JSON (MATRIX in
scenarios.results.files).  Statistics come from the rounds when a view
asks."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from scenarios.results import schema, significance
from scenarios.results.files import MATRIX, ResultsError
from scenarios.results.model import Cells, PhaseResult, RunResult, Sample


def objects(n: int) -> str:
    """A transaction's size in words: "1 object", "100 objects"."""
    return f"{n:,} object" + ("" if n == 1 else "s")


def axis(kind: str, n: int) -> str:
    """A group's clients in words: "1 thread", "20 processes"."""
    word = {"threads": "thread", "processes": "process", "greenlets": "greenlet"}
    unit = word.get(kind, kind)
    if n == 1:
        return f"1 {unit}"
    return f"{n} " + {"process": "processes"}.get(unit, unit + "s")


@dataclasses.dataclass(frozen=True)
class MatrixRound:
    """One round of one cell: its slowest client's timed seconds (the
    cell's value, as zodbshootout collects concurrent workers), and every
    client's."""

    wall_s: float
    clients_s: tuple[float, ...]


@dataclasses.dataclass(frozen=True)
class MatrixCell:
    """Every round of one benchmark at one storage, kind, concurrency and
    transaction size; each round *transactions* transactions of *objects*
    objects per client."""

    storage: str
    benchmark: str
    kind: str
    concurrency: int
    objects: int
    transactions: int
    rounds: tuple[MatrixRound, ...]
    #: Conflicts met and retried (the conflicts benchmark), all clients.
    conflicts: int = 0

    @property
    def per_object_s(self) -> list[float]:
        """Seconds per object of each round (the slowest client's)."""
        return [r.wall_s / (self.transactions * self.objects) for r in self.rounds]

    @property
    def per_object_us(self) -> list[float]:
        return [v * 1e6 for v in self.per_object_s]

    @property
    def axis(self) -> str:
        """The cell's clients in the FAQ's words: "20 threads"."""
        return axis(self.kind, self.concurrency)

    @property
    def row(self) -> str:
        """The cell's name in compare: "add, 20 threads x 100 objects"."""
        return f"{self.benchmark}, {self.axis} x {objects(self.objects)}"


@dataclasses.dataclass(frozen=True)
class MatrixGroup:
    """One storage's clients at one kind and concurrency: every transaction
    size and benchmark on one fresh database, and the check of what its
    clients wrote."""

    storage: str
    kind: str
    concurrency: int
    #: The check ran (False: the group failed before it could).
    checked: bool
    problems: tuple[str, ...] = ()
    #: Why the group failed (None: it ran whole).
    error: str | None = None
    #: What the cold benchmarks emptied, and what they could not.
    cleared: tuple[str, ...] = ()
    kept: tuple[str, ...] = ()
    seconds_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.checked and not self.problems and self.error is None


@dataclasses.dataclass(frozen=True)
class MatrixRun(schema.Stored):
    """A whole matrix: metadata, every cell and every group, in run order."""

    FORMAT = MATRIX
    WHAT = "matrix result"

    kind: ClassVar[str] = "matrix"

    metadata: dict[str, Any]
    results: tuple[MatrixCell, ...]
    groups: tuple[MatrixGroup, ...] = ()

    # -- what views ask ----------------------------------------------------

    @property
    def storages(self) -> list[str]:
        return list(dict.fromkeys(c.storage for c in self.results))

    @property
    def benchmarks(self) -> list[str]:
        return list(dict.fromkeys(c.benchmark for c in self.results))

    @property
    def sizes(self) -> list[int]:
        return sorted({c.objects for c in self.results})

    @property
    def axes(self) -> list[tuple[str, int]]:
        """(kind, concurrency) in the order the FAQ groups them: by
        concurrency, threads before processes."""
        order = {"threads": 0, "processes": 1, "greenlets": 2}
        pairs = {(c.kind, c.concurrency) for c in self.results}
        return sorted(pairs, key=lambda p: (p[1], order.get(p[0], 9), p[0]))

    def get(
        self, storage: str, benchmark: str, kind: str, concurrency: int, objects: int
    ) -> MatrixCell | None:
        for c in self.results:
            if (c.storage, c.benchmark, c.kind, c.concurrency, c.objects) == (
                storage,
                benchmark,
                kind,
                concurrency,
                objects,
            ):
                return c
        return None

    def statistic(self, name: str | None = None) -> significance.Statistic:
        return significance.statistic(name or significance.recorded(self.metadata))

    # -- compare and history ---------------------------------------------------

    def cells(self, cpu: bool = False) -> Cells:
        """compare's cells: seconds per object of each round; a column is a
        storage and kind, a row a benchmark at a concurrency and size.
        A matrix times wall clock only (*cpu* is refused by compare)."""
        return {(c.storage, c.kind, c.row): tuple(c.per_object_s) for c in self.results}

    def identity(self) -> dict[str, Any]:
        """What two matrices must share to be compared: the object size."""
        from scenarios.matrix.objects import PAYLOAD_BYTES_BEFORE

        return {"payload": self.metadata.get("payload_bytes", PAYLOAD_BYTES_BEFORE)}

    def as_run(self) -> RunResult:
        """The matrix as a run file's rows, for history: a column per
        storage and kind, a row per benchmark, concurrency and size, each
        sample a round's seconds per object (wall; CPU not measured: 0)."""
        results = tuple(
            PhaseResult(
                storage=f"{c.storage} {c.kind}",
                size="matrix",
                phase=f"{c.benchmark}, {c.concurrency} x {objects(c.objects)}",
                samples=tuple(Sample(wall_s=v, cpu_s=0.0) for v in c.per_object_s),
            )
            for c in self.results
        )
        return RunResult(metadata=self.metadata, results=results)

    # -- the file ----------------------------------------------------------------

    @classmethod
    def schema(cls) -> schema.Object:
        kind = _OneOf(KINDS)
        cell = schema.of(
            MatrixCell,
            kind=kind,
            concurrency=schema.Positive,
            objects=schema.Positive,
            transactions=schema.Positive,
            rounds=schema.ListOf(schema.of(MatrixRound, True), 1),
        )
        metadata = schema.metadata(schema.CONFIG)
        return schema.Object(
            {
                "metadata": schema.Object(
                    {**metadata.fields, "payload_bytes": schema.Positive}
                ),
                "results": schema.ListOf(
                    cell,
                    1,
                    unique=("storage", "benchmark", "kind", "concurrency", "objects"),
                ),
                "groups": schema.ListOf(
                    schema.of(MatrixGroup, kind=kind, concurrency=schema.Positive)
                ),
            },
            required=("results",),
        )

    @classmethod
    def from_json(cls, data: Any) -> MatrixRun:
        # The schema asks for the results alone: a file may have no metadata.
        run = super().from_json(
            {"metadata": {}, **data} if isinstance(data, dict) else data
        )
        for i, c in enumerate(run.results):
            for j, r in enumerate(c.rounds):
                if len(r.clients_s) != c.concurrency:
                    raise ResultsError(
                        f"malformed {cls.WHAT}: results[{i}].rounds[{j}].clients_s: "
                        f"{len(r.clients_s)} clients at concurrency {c.concurrency}"
                    )
        return run


#: The kinds of concurrency a matrix runs (scenarios.scale.concurrency's).
KINDS = ("threads", "processes", "greenlets")


@dataclasses.dataclass(frozen=True)
class _OneOf(schema.Kind):
    """One of *names* (a cell's kind of concurrency)."""

    names: tuple[str, ...]

    @property
    def expected(self) -> str:  # type: ignore[override]
        return "one of " + ", ".join(self.names)

    def accepts(self, value: Any) -> bool:
        return isinstance(value, str) and value in self.names
