"""The release plan: which parts run, on which storages, shortened how.

Each part is one of the suite's own commands with fewer rounds, shorter
windows or fewer client counts than that command's defaults, so that the
four fit in about five minutes on a two-core machine; `shortened()` says,
for each, what was cut, in the words of the command's options.  --quick
cuts further (a test's minute, not a release's figures) and says so.
"""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

import storages
from scenarios.bench.batching import DEFAULT_XLARGE_BATCH, DEFAULT_XLARGE_CACHE_SIZE
from scenarios.bench.config import (
    DEFAULT_BUDGET_S,
    DEFAULT_REPEAT,
    DEFAULT_WARMUPS,
    ROWS,
    RunConfig,
)
from scenarios.data.estimate import does_not_fit
from scenarios.results import power
from scenarios.results.significance import DEFAULT_STATISTIC
from scenarios.scale.config import DEFAULT_CLIENTS, ScaleConfig
from storages import DBOptions, StorageOptions
from vfab.generate import SIZES, DataSpec, load_catalogue

#: The release's storages when none are named: the embedded ones and zeo.
DEFAULT_STORAGES = storages.DEFAULT_STORAGES

#: The "million" part: the scale whose data set is nearest a million
#: objects (nearest_million: 1,290, between large and xlarge), built in
#: xlarge's batches, on these storages among those named (else the first
#: named; --million-storage names others).  Measured here on an idle 2-core
#: machine, that part took 65 s on file and 147 s on zeo, and the rest of a
#: default release about a minute: file alone keeps the whole within five
#: minutes with room for a slower machine.
MILLION = 1_000_000
MILLION_STORAGES = ("file",)

#: The scale command's defaults, for saying what the release cut.
SCALE_DEFAULTS = ScaleConfig(storages=("zeo",))


@dataclasses.dataclass(frozen=True)
class MicroPlan:
    """The pytest-benchmark micro suite: on these storages, at least
    *min_rounds* rounds of each benchmark and at most *max_time_s* seconds
    of rounds (pytest-benchmark: 5 and 1.0), the tests -k selects."""

    storages: tuple[str, ...]
    min_rounds: int
    max_time_s: float
    select: str = ""

    def pytest_args(self, json_path: Path) -> list[str]:
        args = [
            "--benchmark-only",
            f"--benchmark-json={json_path}",
            f"--benchmark-min-rounds={self.min_rounds}",
            f"--benchmark-max-time={self.max_time_s:g}",
        ]
        for name in self.storages:
            args += ["--storage", name]
        if self.select:
            args += ["-k", self.select]
        return args


@dataclasses.dataclass(frozen=True)
class ReleasePlan:
    """The four parts (None: not run, with the reason in *skipped*)."""

    storages: tuple[str, ...]
    quick: bool
    table: RunConfig
    micro: MicroPlan
    scale: ScaleConfig | None
    million: RunConfig | None
    skipped: dict[str, str]

    def shortened(self) -> list[str]:
        """One line per part: what it runs, and what it cut to fit."""
        t = self.table
        lines = [
            f"2000 table: the 2000 rows, {t.repeat} round(s) after "
            f"{t.warmups} warmup(s), no budget (run's default: every row, "
            f"{DEFAULT_REPEAT} rounds after {DEFAULT_WARMUPS}, then top-up rounds "
            f"for {DEFAULT_BUDGET_S:g} s)",
        ]
        m = self.micro
        select = f", only -k {m.select!r}" if m.select else ""
        lines.append(
            f"micro-benchmarks: at least {m.min_rounds} round(s), at most "
            f"{m.max_time_s:g} s of rounds per benchmark{select} "
            "(pytest-benchmark's default: 5 rounds, 1 s)"
        )
        s = self.scale
        if s is None:
            lines.append(f"concurrency: not run ({self.skipped['scale']})")
        else:
            d = SCALE_DEFAULTS
            lines.append(
                f"concurrency: {', '.join(s.storages)} at "
                f"{','.join(map(str, s.clients))} client(s), {s.duration_s:g} s "
                f"windows after {s.warmup_s:g} s of warmup, checked (scale's "
                f"default: {','.join(map(str, d.clients))} clients, "
                f"{d.duration_s:g} s after {d.warmup_s:g} s)"
            )
        r = self.million
        if r is None:
            lines.append(f"million: not run ({self.skipped['million']})")
        else:
            objects = expected_objects(r.scale)
            what = (
                f"--scale {r.scale:,} (about {objects:,} objects, in batches of "
                f"{r.batch_size:,})"
                if not self.quick
                else f"{r.size} (about {objects:,} objects; --quick: not a million)"
            )
            lines.append(
                f"million: {what}, the 2000 rows, {r.repeat} trial, no warmup, "
                f"on {', '.join(r.storages)} only (run's default: every row, "
                f"{DEFAULT_REPEAT} rounds after {DEFAULT_WARMUPS} and a budget; "
                "--million-storage for others)"
            )
        return lines


def table_rounds(storages: int) -> int:
    """Rounds of the 2000 table: enough that compare can call a change of
    one cell significant among all of two releases' cells (power), at least
    run's default; 10 where no number up to power's limit would do.  Three
    rounds made every cell of two releases "inconclusive"."""
    cells = len(ROWS["2000"]) * max(storages, 1)
    return max(DEFAULT_REPEAT, power.trials_needed(DEFAULT_STATISTIC, cells) or 10)


def expected_objects(scale: int) -> int:
    from scenarios.data.dataset import expected_objects as expected

    return expected(DataSpec.for_scale(scale), load_catalogue())


def nearest_million() -> int:
    """The scale (--scale) whose data set is nearest a million objects (the
    objects grow linearly with the scale)."""
    one, two = expected_objects(1), expected_objects(2)
    guess = 1 + round((MILLION - one) / (two - one))
    return min(
        (guess - 1, guess, guess + 1),
        key=lambda scale: abs(expected_objects(scale) - MILLION),
    )


def plan(
    names: tuple[str, ...],
    quick: bool,
    options: StorageOptions | None = None,
    scratch: Path | None = None,
) -> ReleasePlan:
    """The release on *names* (already checked to run here): the default
    parts, or --quick's."""
    options = options or StorageOptions()
    skipped: dict[str, str] = {}
    table = RunConfig(
        storages=names,
        rows="2000",
        repeat=1 if quick else table_rounds(len(names)),
        warmups=0 if quick else 1,
        budget_s=0,
        options=options,
    )
    micro = MicroPlan(
        storages=names,
        min_rounds=1 if quick else 3,
        max_time_s=0.005 if quick else 0.05,
        select="new_oid or hot_read" if quick else "",
    )
    shared = tuple(n for n in names if storages.get(n, options).shared)
    scale: ScaleConfig | None = None
    if shared:
        scale = ScaleConfig(
            storages=shared,
            clients=(1, 2) if quick else tuple(c for c in DEFAULT_CLIENTS if c <= 4),
            duration_s=1.0 if quick else 3.0,
            warmup_s=0.5 if quick else 1.0,
        )
    else:
        skipped["scale"] = "none of the storages named can be shared by processes"
    scale_m = SIZES["medium"] if quick else nearest_million()
    reason = does_not_fit(scale_m, scratch or Path(tempfile.gettempdir()))
    million: RunConfig | None = None
    if reason is None:
        if options.get(DBOptions).cache_size is None and not quick:
            options = options.replace(DBOptions(cache_size=DEFAULT_XLARGE_CACHE_SIZE))
        million = RunConfig(
            storages=tuple(n for n in MILLION_STORAGES if n in names) or names[:1],
            scale=scale_m,
            rows="2000",
            repeat=1,
            warmups=0,
            budget_s=0,
            options=options,
            batch=None if quick else DEFAULT_XLARGE_BATCH,
        )
    else:
        skipped["million"] = reason
    return ReleasePlan(names, quick, table, micro, scale, million, skipped)
