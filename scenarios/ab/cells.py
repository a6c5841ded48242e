"""Cell sources: what one trial of `vfab-bench ab` measures in a worker.

A source is built in the worker from its name and plain parameters (what
crosses the pipe), entered once (the servers its storages share started),
then asked for trials: each gives {(column, row): seconds}, lower is
better.  Both sides build the same source with the same parameters and run
the same trial number, so cell (column, row) of pair k is one measurement
on A and one on B.  The runner's phases and the micro-benchmarks' pytest
suite do the timing: nothing here times anything itself.

A source is one class with a *name*, named in SOURCES (with its title)
and found by build(): the worker, the runner and the report take it as it
is.  The matrix's cells and a scale point are in clientcells.py.
"""

from __future__ import annotations

import contextlib
import gc
import json
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Protocol

from scenarios.ab.params import Cell, decoded_options


class Unavailable(ValueError):
    """A storage named cannot run in this worker's environment (bad input,
    told to the parent as such)."""


def usable(names: Sequence[str], options: Any = None) -> list[Any]:
    """The factories of *names* (with *options*: default ones), each able to
    run in this environment."""
    import storages

    options = options if options is not None else storages.StorageOptions()
    factories = [storages.get(name, options) for name in names]
    for factory in factories:
        reason = factory.unavailable()
        if reason is not None:
            raise Unavailable(f"storage {factory.name!r} is not available: {reason}")
    return factories


class CellSource(Protocol):
    """One kind of cells, in a worker: enter it once, then trial() as often
    as the parent asks."""

    name: ClassVar[str]

    def __enter__(self) -> CellSource: ...

    def __exit__(self, *exc: object) -> None: ...

    def trial(self, k: int) -> dict[Cell, float]: ...


class Rows:
    """The eight rows of the 2000 table: run_trial on a fresh database per
    storage (the bench runner's phases), each phase's wall time."""

    name: ClassVar[str] = "rows"

    def __init__(self, params: Mapping[str, Any]) -> None:
        from scenarios.bench.config import RunConfig

        self.config = RunConfig(
            storages=tuple(params["storages"]),
            scale=int(params.get("scale", 1)),
            repeat=1,
            warmups=0,
            budget_s=0.0,
            rows="2000",
            options=decoded_options(params),
        )
        self.factories = usable(self.config.storages, self.config.storage_options)
        self._stack = contextlib.ExitStack()
        self._scratch: Path | None = None

    def __enter__(self) -> Rows:
        from scenarios.interrupts import scratch_directory

        try:
            self._scratch = self._stack.enter_context(scratch_directory("vfab-ab-"))
            for factory in self.factories:
                self._stack.enter_context(factory.running())
        except BaseException:
            self._stack.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def trial(self, k: int) -> dict[Cell, float]:
        from scenarios.bench.phases import PHASES_2000
        from scenarios.bench.runner import run_trial

        out: dict[Cell, float] = {}
        for factory in self.factories:
            done = run_trial(factory, self.config, PHASES_2000, self._scratch)
            for phase, sample in done.samples.items():
                out[(factory.name, phase)] = sample.wall_s
        if k == 0:
            # As the bench runner does after its warmups: what is alive now
            # (imports, servers' clients) is not walked again by every
            # collection (the parent counts trial 0 as a warmup).
            gc.collect()
            gc.freeze()
        return out


#: The micro-benchmarks' pytest suite, in the checkout in use.
MICRO_SUITE = (
    Path(__file__).resolve().parents[2] / "tests" / "benchmarks" / "test_micro.py"
)
#: Rounds of each micro-benchmark per trial (pytest-benchmark's
#: --benchmark-min-rounds; its --benchmark-max-time small enough that
#: the minimum decides).
MICRO_ROUNDS = 3
MICRO_MAX_TIME_S = 0.02
#: --quick's micro-benchmarks: one of each kind of work.
MICRO_QUICK = "add or update or (cold_read and not prefetch) or tpc"


class Micro:
    """The micro-benchmarks (tests/benchmarks/test_micro.py, as release runs
    them): one pytest-benchmark session per trial, in the worker's own
    process; each benchmark's median seconds per round is a cell."""

    name: ClassVar[str] = "micro"

    def __init__(self, params: Mapping[str, Any]) -> None:
        self.storages = tuple(params["storages"])
        usable(self.storages, decoded_options(params))
        # Three rounds a trial: the pairs give the statistics, and every
        # benchmark of file and zeo fits in about ten seconds a trial.
        self.min_rounds = MICRO_ROUNDS
        self.max_time_s = MICRO_MAX_TIME_S
        self.select = MICRO_QUICK if params.get("quick") else ""
        self._dir: tempfile.TemporaryDirectory[str] | None = None

    def __enter__(self) -> Micro:
        if not MICRO_SUITE.is_file():
            raise RuntimeError(f"the micro-benchmarks are not here: {MICRO_SUITE}")
        self._dir = tempfile.TemporaryDirectory(prefix="vfab-ab-micro-")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._dir is not None:
            self._dir.cleanup()

    def argv(self, json_path: Path) -> list[str]:
        from scenarios.micro import MicroPlan

        plan = MicroPlan(self.storages, self.min_rounds, self.max_time_s, self.select)
        return [
            str(MICRO_SUITE),
            "-p",
            "no:cacheprovider",
            "-q",
            *plan.pytest_args(json_path),
        ]

    def trial(self, k: int) -> dict[Cell, float]:
        import pytest

        assert self._dir is not None
        path = Path(self._dir.name) / f"trial-{k}.json"
        status = pytest.main(self.argv(path))
        sys.stdout.flush()
        if status != 0 or not path.is_file():
            raise RuntimeError(f"the micro-benchmarks' pytest exited {int(status)}")
        data = json.loads(path.read_text())
        path.unlink()
        out: dict[Cell, float] = {}
        for b in data.get("benchmarks", []):
            storage = str((b.get("params") or {}).get("storage", "?"))
            median = (b.get("stats") or {}).get("median")
            if isinstance(median, (int, float)):
                out[(storage, str(b.get("group") or b.get("name")))] = float(median)
        return out


#: Every cell source, by name, with its title: what `ab --cells` chooses
#: from.
SOURCES: dict[str, str] = {
    "rows": "the 2000 rows",
    "micro": "the micro-benchmarks",
    "matrix": "the matrix's cells (seconds per object)",
    "scale": "a scale point",
}


def build(name: str, params: Mapping[str, Any]) -> CellSource:
    """The source *name* with *params* (in the worker)."""
    from scenarios.ab.clientcells import CLASSES

    classes: dict[str, Any] = {"rows": Rows, "micro": Micro, **CLASSES}
    source: CellSource = classes[name](params)
    return source
