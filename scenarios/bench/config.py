"""The run configuration: validated once, frozen, recorded in every result."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import storages
from scenarios.bench.phases import PHASES, PHASES_2000, Phase
from scenarios.data.batching import DEFAULT_XLARGE_BATCH, DEFAULT_XLARGE_CACHE_SIZE
from scenarios.errors import ConfigError
from scenarios.results.significance import DEFAULT_STATISTIC, STATISTICS
from storages import DBOptions, StorageOptions
from vfab.generate import DEFAULT_SEED, SIZES, DataSpec

#: --rows: which phases a run times.
ROWS: dict[str, tuple[Phase, ...]] = {"all": PHASES, "2000": PHASES_2000}

#: The default run, here once for RunConfig and `vfab-bench run`:
#: DEFAULT_REPEAT interleaved rounds of every row after DEFAULT_WARMUPS
#: warmup rounds, then rounds of the 2000 rows while DEFAULT_BUDGET_S (timed
#: rounds only) lasts, up to DEFAULT_MAX_TRIALS per storage; see
#: docs/results.md for why.  The tables show DEFAULT_STATISTIC (defined
#: once, in scenarios.results.significance).
DEFAULT_REPEAT = 5
DEFAULT_WARMUPS = 1
DEFAULT_BUDGET_S = 17.0
DEFAULT_MAX_TRIALS = 100


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """Everything that decides what a run measures."""

    storages: tuple[str, ...] = storages.DEFAULT_STORAGES
    scale: int = 1
    #: Timed rounds of every row (one trial per storage each): exactly this
    #: many, or with a *budget_s* this many before the top-up rounds.
    repeat: int = DEFAULT_REPEAT
    #: Warmup rounds (one untimed trial of every storage each) before them.
    warmups: int = DEFAULT_WARMUPS
    #: Seconds the timed rounds may take: after the *repeat* rounds, top-up
    #: rounds time the 2000 rows of the storages whose minimums have not
    #: settled while the next round fits, up to *max_trials* per storage
    #: (0: no budget, exactly *repeat* rounds; see scenarios.bench.runner).
    budget_s: float = DEFAULT_BUDGET_S
    max_trials: int = DEFAULT_MAX_TRIALS
    #: "all" rows, or "2000": only the eight rows of the 2000 table.
    rows: str = "all"
    #: The statistic the tables show (scenarios.results.significance).
    statistic: str = DEFAULT_STATISTIC
    seed: int = DEFAULT_SEED
    options: StorageOptions = StorageOptions()
    #: Objects per transaction while building the data set; 0: one
    #: transaction per phase (the 2000 way); None: 0 below xlarge's scale,
    #: DEFAULT_XLARGE_BATCH from it up (see batch_size).  Likewise a
    #: cache_size of None in *options* means DEFAULT_XLARGE_CACHE_SIZE from
    #: xlarge's scale up (see storage_options).
    batch: int | None = None
    #: Write one cProfile file per phase and storage here (None: no profiling).
    profile_dir: Path | None = None

    def __post_init__(self) -> None:
        check_storage_names(self.storages, self.options)
        if self.scale < 1:
            raise ConfigError(f"scale must be at least 1, not {self.scale}")
        if self.repeat < 1:
            raise ConfigError(f"--repeat must be at least 1, not {self.repeat}")
        if self.budget_s < 0:
            raise ConfigError(f"--budget must be 0 or more, not {self.budget_s}")
        if self.max_trials < self.repeat:
            raise ConfigError(
                f"--max-trials {self.max_trials} is below --repeat {self.repeat}"
            )
        if self.rows not in ROWS:
            raise ConfigError(
                f"unknown rows {self.rows!r}; choose from {', '.join(ROWS)}"
            )
        if self.statistic not in STATISTICS:
            raise ConfigError(
                f"unknown statistic {self.statistic!r}; choose from "
                f"{', '.join(STATISTICS)}"
            )
        if self.warmups < 0:
            raise ConfigError(f"--warmups must be 0 or more, not {self.warmups}")
        if self.batch is not None and self.batch < 0:
            raise ConfigError(f"--batch must be 0 or more, not {self.batch}")

    @property
    def phases(self) -> tuple[Phase, ...]:
        """The phases this run times, in the order of the report's rows."""
        return ROWS[self.rows]

    @property
    def xlarge(self) -> bool:
        return self.scale >= SIZES["xlarge"]

    @property
    def batch_size(self) -> int:
        """Objects per transaction while building (0: one per phase)."""
        if self.batch is not None:
            return self.batch
        return DEFAULT_XLARGE_BATCH if self.xlarge else 0

    @property
    def storage_options(self) -> StorageOptions:
        """The options the stores open with: *options*, with xlarge's
        connection cache target when none was given."""
        if self.options.get(DBOptions).cache_size is None and self.xlarge:
            return self.options.replace(DBOptions(cache_size=DEFAULT_XLARGE_CACHE_SIZE))
        return self.options

    @property
    def spec(self) -> DataSpec:
        return DataSpec.for_scale(self.scale)

    @property
    def size(self) -> str:
        return self.spec.name

    def to_json(self) -> dict[str, Any]:
        options = storages.options_json(self.storage_options)
        return {
            "storages": list(self.storages),
            "size": self.size,
            "scale": self.scale,
            "repeat": self.repeat,
            "warmups": self.warmups,
            "budget_s": self.budget_s,
            "max_trials": self.max_trials,
            "rows": self.rows,
            "statistic": self.statistic,
            "seed": self.seed,
            "options": options,
            "batch": self.batch_size,
            "profile": self.profile_dir is not None,
        }


def check_storage_names(
    names: tuple[str, ...], options: StorageOptions | None = None
) -> None:
    """ConfigError unless *names* are storages (registered, zlib+NAME, or the
    columns *options* configure), each named once."""
    if not names:
        raise ConfigError("no storage named")
    for name in names:
        try:
            storages.factory_class(name, options)
        except storages.StorageError as e:
            raise ConfigError(str(e)) from None
    if len(set(names)) != len(names):
        raise ConfigError("a storage is named twice")


def scale_for(size: str | None, scale: int | None) -> int:
    """The scale a --size name or a --scale number asks for."""
    if size is not None and scale is not None:
        raise ConfigError("give --size or --scale, not both")
    if scale is not None:
        if scale < 1:
            raise ConfigError(f"--scale must be at least 1, not {scale}")
        return scale
    size = size or "small"
    if size not in SIZES:
        raise ConfigError(f"unknown size {size!r}; choose from {', '.join(SIZES)}")
    return SIZES[size]
