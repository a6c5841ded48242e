"""Cell sources that drive client processes: the matrix's cells and a scale
point, each trial one whole run of the matrix's or scale's own runner in
the worker (so in the side's environment: the client processes they
spawn start with the worker's python, and the servers they start too).

What is used of those packages, and nothing more: matrix.config's
MatrixConfig and QUICK_* constants, matrix.runner.run() and its cells'
row and per_object_s; scale.config's ScaleConfig, scale.runner.run() and
its points' storage, clients, window_s, ops and histogram().  Both
runners start and stop their own servers and processes on every exit.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from typing import Any, ClassVar

from scenarios.ab.defaults import (
    MATRIX_CONCURRENCY,
    MATRIX_OBJECTS,
    MATRIX_QUICK_CONCURRENCY,
    MATRIX_QUICK_OBJECTS,
    SCALE_CLIENTS,
    SCALE_DURATION_S,
    SCALE_WARMUP_S,
)
from scenarios.ab.params import Cell, decoded_options
from scenarios.errors import ConfigError, RunFailure


def matrix_config(params: Mapping[str, Any]) -> Any:
    """The MatrixConfig one trial runs: the matrix's quick benchmarks and
    rounds on *params*' storages, at ab's own axes (a trial is a whole
    matrix run, so ab takes fewer groups than the matrix's default);
    ConfigError as the matrix says it (a storage that commits nothing)."""
    from scenarios.matrix import config

    quick = bool(params.get("quick"))
    return config.MatrixConfig(
        storages=tuple(params["storages"]),
        concurrency=MATRIX_QUICK_CONCURRENCY if quick else MATRIX_CONCURRENCY,
        objects=MATRIX_QUICK_OBJECTS if quick else MATRIX_OBJECTS,
        benchmarks=config.QUICK_BENCHMARKS,
        rounds=config.QUICK_ROUNDS,
        transactions=config.QUICK_TRANSACTIONS,
        quick=quick,
        options=decoded_options(params),
    )


class WholeRuns:
    """A source each trial of which is a whole run that starts and stops
    what it needs: nothing to enter or leave."""

    def __enter__(self) -> WholeRuns:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


class MatrixCells(WholeRuns):
    """The matrix's cells: each cell's median seconds per object over its
    rounds (the slowest client's, as the matrix takes a round)."""

    name: ClassVar[str] = "matrix"

    def __init__(self, params: Mapping[str, Any]) -> None:
        self.config = matrix_config(params)

    def trial(self, k: int) -> dict[Cell, float]:
        from scenarios.matrix.runner import run

        done = run(self.config, None)
        return {
            (c.storage, c.row): statistics.median(c.per_object_s) for c in done.results
        }


def scale_storages(params: Mapping[str, Any]) -> tuple[str, ...]:
    """Of *params*' storages, those more than one process opens (a scale
    point's clients are processes); ConfigError when none is."""
    import storages

    options = decoded_options(params)
    names = tuple(
        n for n in params["storages"] if storages.factory_class(n, options).shared
    )
    if not names:
        raise ConfigError(
            "--cells scale needs a storage that several processes open at once "
            "(zeo, relstorage-...); none of --storage is"
        )
    return names


def scale_config(params: Mapping[str, Any]) -> Any:
    """The ScaleConfig one trial runs: one closed-loop point per shared
    storage at SCALE_CLIENTS clients, the load alone (no consistency
    check: what is compared is time)."""
    from scenarios.scale.config import ScaleConfig

    return ScaleConfig(
        storages=scale_storages(params),
        clients=(SCALE_CLIENTS,),
        scale=int(params.get("scale", 1)),
        duration_s=SCALE_DURATION_S,
        warmup_s=SCALE_WARMUP_S,
        check=False,
    )


class ScalePoint(WholeRuns):
    """A scale point: per storage, the seconds per successful operation
    over the window (the inverse of its throughput) and the median
    operation's latency."""

    name: ClassVar[str] = "scale"

    def __init__(self, params: Mapping[str, Any]) -> None:
        self.config = scale_config(params)
        self.options = decoded_options(params)

    def trial(self, k: int) -> dict[Cell, float]:
        from scenarios.clients.histogram import summary_ms
        from scenarios.scale.runner import run

        out: dict[Cell, float] = {}
        for point in run(self.config, self.options):
            if not point.ops:
                raise RunFailure(f"scale: {point.storage}: no operation succeeded")
            where = f"{point.clients} clients"
            out[(point.storage, f"{where}, time per operation")] = (
                point.window_s / point.ops
            )
            p50_ms = float(summary_ms(point.histogram())["p50"])
            out[(point.storage, f"{where}, median latency")] = p50_ms / 1000
        return out


#: These sources by name (cells.SOURCES names them for the command line).
CLASSES: dict[str, Any] = {"matrix": MatrixCells, "scale": ScalePoint}
#: Each source's check of its parameters, run in the parent before any work.
CHECKS = {"matrix": matrix_config, "scale": scale_config}
