"""The release plan: which parts run, on which storages, shortened how, so
that the five fit in about five minutes on two cores; shortened() says
what was cut in each command's words (what the counts cover and what it
cost: docs/internals.md).
"""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

import storages
from scenarios.bench.config import (
    DEFAULT_BUDGET_S,
    DEFAULT_REPEAT,
    DEFAULT_WARMUPS,
    ROWS,
    RunConfig,
)
from scenarios.data.batching import DEFAULT_XLARGE_BATCH, DEFAULT_XLARGE_CACHE_SIZE
from scenarios.data.estimate import does_not_fit
from scenarios.micro import MicroPlan
from scenarios.results import power
from scenarios.results.formatter import plural
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
#: machine, that part took 65 s on file and 147 s on zeo (2026-11-25), and
#: 108 s on file on 2026-11-28, when the machine's speed probe ran 3x
#: slower: file alone keeps it the release's longest part but one.
MILLION = 1_000_000
MILLION_STORAGES = ("file",)

#: The scale command's defaults, for saying what the release cut.
SCALE_DEFAULTS = ScaleConfig(storages=("zeo",))

#: The fewest sub-windows of a release's curve point (see curve_windows).
CURVE_WINDOWS = 6

#: Seconds per storage (or per point, per million run) each part takes on
#: an idle two-core machine, the default storages (ReleasePlan.estimates):
#: measured by `vfab-bench release --out DIR` (docs/internals.md); the
#: counts, micro counts and million on 2026-11-28 (359 s in all, the
#: speed probe at 1.5-1.9 ms: the first ETA said 4:50 with the older ones).
ESTIMATES = {
    "table": 2.0,
    "table quick": 1.0,
    "counts": 26.0,
    "counts quick": 12.0,
    "micro counts": 133.0,
    "micro counts quick": 25.0,
    "micro": 6.0,
    "micro quick": 3.0,
    "scale point": 3.5,
    "million": 108.0,
    "million served": 150.0,
    "million quick": 5.0,
}

#: The micro-benchmarks counted under pytest, on these storages among those
#: named (else none): pytest under callgrind costs about 40 s a storage
#: idle (93 s measured at load average 4-6).
MICRO_COUNT_STORAGES = ("file",)
#: --quick's micro-benchmarks (timed and counted).
QUICK_MICRO = "new_oid or hot_read"


@dataclasses.dataclass(frozen=True)
class CountsPlan:
    """The counts: the 2000 rows of *table* (a RunConfig `run --counts`
    takes) and the micro-benchmarks on *micro_storages* (-k *select*)."""

    table: RunConfig
    micro_storages: tuple[str, ...]
    select: str = ""

    def pytest_args(self, json_path: Path) -> list[str]:
        args = [f"--benchmark-json={json_path}", "-p", "no:cacheprovider", "-q"]
        for name in self.micro_storages:
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
    counts: CountsPlan | None = None

    def estimates(self) -> dict[str, float]:
        """Seconds each part should take on an idle two-core machine (the
        release's ETA before a part has ended; measured there: ESTIMATES);
        0 for a part not run."""
        e, quick = ESTIMATES, self.quick
        n = len(self.storages)
        counts = 0.0
        if self.counts is not None:
            per = e["counts quick"] if quick else e["counts"]
            micro = e["micro counts quick"] if quick else e["micro counts"]
            counts = max(per * n, micro * len(self.counts.micro_storages))
        scale = 0.0
        if self.scale is not None:
            s = self.scale
            points = len(s.storages) * len(s.clients)
            scale = points * (s.warmup_s + s.duration_s + e["scale point"])
        million = 0.0
        if self.million is not None:
            per_storage = {n: e["million quick" if quick else "million"]
                           for n in self.million.storages}  # fmt: skip
            if not quick:
                per_storage.update(
                    (n, e["million served"])
                    for n in self.million.storages
                    if storages.get(n, self.table.options).starts_server
                )
            million = sum(per_storage.values())
        return {
            "table": (e["table quick"] if quick else e["table"]) * n,
            "counts": counts,
            "micro": (e["micro quick"] if quick else e["micro"])
            * len(self.micro.storages),
            "scale": scale,
            "million": million,
        }

    def shortened(self) -> list[str]:
        """One line per part: what it runs, and what it cut to fit."""
        t = self.table
        lines = [
            f"2000 table: the 2000 rows, {plural(t.repeat, 'round')} after "
            f"{plural(t.warmups, 'warmup')}, no budget (run's default: every row, "
            f"{DEFAULT_REPEAT} rounds after {DEFAULT_WARMUPS}, then top-up rounds "
            f"for {DEFAULT_BUDGET_S:g} s)",
        ]
        c = self.counts
        if c is None:
            lines.append(f"counts: not run ({self.skipped['counts']})")
        else:
            micro = (
                f"the micro-benchmarks on {', '.join(c.micro_storages)}"
                + (f" (-k {c.select!r})" if c.select else "")
                if c.micro_storages
                else "no micro-benchmark (file not named)"
            )
            lines.append(
                f"counts (the gate): the 2000 rows of every storage, "
                f"{plural(c.table.repeat, 'counted trial')} after "
                f"{plural(c.table.warmups, 'warmup')}, and {micro} (run --counts' "
                "default: every row, 2 counted trials)"
            )
        m = self.micro
        select = f", only -k {m.select!r}" if m.select else ""
        lines.append(
            f"micro-benchmarks: on {', '.join(m.storages) or 'no storage'}, "
            f"at least {plural(m.min_rounds, 'round')}, at most "
            f"{m.max_time_s:g} s of rounds per benchmark{select} "
            "(pytest-benchmark's default: 5 rounds, 1 s)"
        )
        s = self.scale
        if s is None:
            lines.append(f"concurrency: not run ({self.skipped['scale']})")
        else:
            d = SCALE_DEFAULTS
            clients = ", ".join(map(str, s.clients))
            lines.append(
                f"concurrency: {', '.join(s.storages)} at {clients} clients, "
                f"{s.duration_s:g} s windows of {s.windows} sub-windows after "
                f"{s.warmup_s:g} s of warmup, checked (scale's default: "
                f"{','.join(map(str, d.clients))} clients, {d.duration_s:g} s "
                f"of {d.windows} after {d.warmup_s:g} s)"
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
                f"million: {what}, the 2000 rows, {plural(r.repeat, 'trial')}, "
                "no warmup, "
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


def curve_windows(points: int) -> int:
    """Sub-windows per point of the release's curve: enough that compare can
    call a change of one measure (ops/s or p99 of one point) significant
    among all of two releases' (power: 8 a side of the median among the 6
    of zeo at 1, 2 and 4 clients), CURVE_WINDOWS at least."""
    from scenarios.scale.report import WINDOW_STATISTIC

    needed = power.trials_needed(WINDOW_STATISTIC, 2 * max(points, 1))
    return max(CURVE_WINDOWS, needed or CURVE_WINDOWS)


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
        # The suite's --storage takes registry names only (not the columns
        # of --storage-config or --storage-uri).
        storages=tuple(n for n in names if n in storages.REGISTRY),
        min_rounds=1 if quick else 3,
        max_time_s=0.005 if quick else 0.05,
        select=QUICK_MICRO if quick else "",
    )
    counts = CountsPlan(
        table=dataclasses.replace(table, repeat=1, warmups=0 if quick else 1),
        micro_storages=tuple(n for n in MICRO_COUNT_STORAGES if n in names)
        or (names[:1] if quick and names[0] in storages.REGISTRY else ()),
        select=QUICK_MICRO if quick else "",
    )
    shared = tuple(n for n in names if storages.get(n, options).shared)
    scale: ScaleConfig | None = None
    if shared:
        clients = (1, 2) if quick else tuple(c for c in DEFAULT_CLIENTS if c <= 4)
        scale = ScaleConfig(
            storages=shared,
            clients=clients,
            duration_s=1.0 if quick else 3.0,
            warmup_s=0.5 if quick else 1.0,
            windows=curve_windows(len(shared) * len(clients)),
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
    return ReleasePlan(names, quick, table, micro, scale, million, skipped, counts)
