"""The cost curve: commit cost per object against objects per transaction.

The pickler-memo trap: ZODB's ObjectWriter pickles every object of a commit with
one pickler and clears its memo after each object, and CPython's clear_memo
costs time proportional to the largest memo the pickler ever held.  One
object whose pickle holds N references (a flat PersistentList of N
persistent objects) grows that memo to N entries, so every object pickled
after it in the same commit pays O(N): cost per object grows with the
transaction.  A BTree holds the same objects in buckets of a few dozen
references each, so its cost per object stays flat.  The sweep shows both.

One trial, on a fresh database opened through the registry:
  1. untimed: populate the small vfab data set (scenarios.data.dataset.populate)
     and commit it, so there are 250 process capabilities to order;
  2. untimed: build N ProcessSteps in memory, each ordering a random
     capability with parameter settings inside its ranges (as
     vfab.generate builds the steps of a sequence), and put them in the
     variant's container under root['vfab-loadtest']['sweep']:
       btree: an IOBTree {i -> step}; the commit stores the N steps, the
              tree and its buckets (about N/30 of them);
       list:  one PersistentList of the N steps; the commit stores the N
              steps and the list, whose one pickle holds N references;
  3. timed: the one commit (transaction manager commit), wall
     (perf_counter) and CPU (process_time of this process: a ZEO server's
     CPU is not in it).
Cost per object is the commit's time divided by N.  A sample also records
the objects the commit stored (Connection.getTransferCounts) and the bytes
the storage grew by.

JSON format history (bump SWEEP_SCHEMA_VERSION and add a line on change):
  1 -- {"schema_version": 1, "kind": "sweep", "metadata": {"date",
        "python", "versions", "host", "config": SweepConfig.to_json(),
        "command"}, "results": [{"storage", "variant", "objects": N,
        "samples": [{"wall_s", "cpu_s", "stores", "bytes_written"}]}]};
        wall_s and cpu_s time the whole commit (divide by objects for the
        cost per object); stores and bytes_written are null where the
        storage cannot tell.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import random
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import storages
from scenarios.bench.config import check_storage_names
from scenarios.data import dataset
from scenarios.errors import ConfigError
from scenarios.results.metadata import collect as collect_metadata
from scenarios.results.model import ResultsError, Stats
from storages import StorageOptions
from storages.memory import MemoryFactory
from vfab.generate import DEFAULT_SEED, DataSpec, draw
from vfab.model import ProcessStep, VirtualFab

SWEEP_SCHEMA_VERSION = 1

DEFAULT_OBJECTS: tuple[int, ...] = (100, 1_000, 10_000, 50_000)
DEFAULT_STORAGES: tuple[str, ...] = ("mapping", "file", "zeo")

#: Key under the suite's root container for the committed objects.
SWEEP_KEY = "sweep"


@dataclasses.dataclass(frozen=True)
class Variant:
    name: str
    description: str
    build: Callable[[list[ProcessStep]], Any]


def _btree(steps: list[ProcessStep]) -> Any:
    from BTrees.IOBTree import IOBTree

    tree = IOBTree()
    for i, step in enumerate(steps):
        tree[i] = step
    return tree


def _flat_list(steps: list[ProcessStep]) -> Any:
    from persistent.list import PersistentList

    return PersistentList(steps)


#: name -> variant, in the order of the report's columns.
VARIANTS: dict[str, Variant] = {
    v.name: v
    for v in (
        Variant("btree", "the steps in an IOBTree {i -> step}", _btree),
        Variant("list", "the steps in one flat PersistentList", _flat_list),
    )
}


@dataclasses.dataclass(frozen=True)
class SweepConfig:
    """What a sweep measures; validated here, recorded in its metadata.

    warmups: untimed trials per storage and variant, at the smallest
    transaction size, before the timed ones.
    """

    storages: tuple[str, ...] = DEFAULT_STORAGES
    objects: tuple[int, ...] = DEFAULT_OBJECTS
    variants: tuple[str, ...] = tuple(VARIANTS)
    repeat: int = 3
    warmups: int = 1
    seed: int = DEFAULT_SEED
    options: StorageOptions = StorageOptions()

    def __post_init__(self) -> None:
        check_storage_names(self.storages)
        for name in self.storages:
            if issubclass(storages.REGISTRY[name], MemoryFactory):
                raise ConfigError(
                    f"storage {name!r} commits nothing; sweep measures commits"
                )
        if len(set(self.variants)) != len(self.variants):
            raise ConfigError("a variant is named twice")
        if not self.variants:
            raise ConfigError("no variant named")
        for v in self.variants:
            if v not in VARIANTS:
                raise ConfigError(
                    f"unknown variant {v!r}; choose from {', '.join(VARIANTS)}"
                )
        if not self.objects:
            raise ConfigError("no transaction size named")
        if min(self.objects) < 1:
            raise ConfigError(
                f"objects per transaction must be at least 1, not {min(self.objects)}"
            )
        if len(set(self.objects)) != len(self.objects):
            raise ConfigError("a transaction size is named twice")
        if self.repeat < 1:
            raise ConfigError(f"--repeat must be at least 1, not {self.repeat}")
        if self.warmups < 0:
            raise ConfigError(f"--warmups must be 0 or more, not {self.warmups}")

    def to_json(self) -> dict[str, Any]:
        options = self.options.to_json()
        return {
            "storages": list(self.storages),
            "objects": list(self.objects),
            "variants": list(self.variants),
            "repeat": self.repeat,
            "warmups": self.warmups,
            "seed": self.seed,
            "options": options,
        }


@dataclasses.dataclass(frozen=True)
class SweepSample:
    """One commit of one trial."""

    wall_s: float
    cpu_s: float
    stores: int | None = None
    bytes_written: int | None = None

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class SweepPoint:
    """Every trial of one storage, variant and transaction size."""

    storage: str
    variant: str
    objects: int
    samples: tuple[SweepSample, ...]

    @property
    def wall_us(self) -> Stats:
        """Wall microseconds per object, over the trials."""
        return Stats.of(s.wall_s * 1e6 / self.objects for s in self.samples)

    @property
    def cpu_us(self) -> Stats:
        return Stats.of(s.cpu_s * 1e6 / self.objects for s in self.samples)

    @property
    def stores(self) -> int | None:
        vals = sorted(s.stores for s in self.samples if s.stores is not None)
        return vals[len(vals) // 2] if vals else None

    def to_json(self) -> dict[str, Any]:
        return {
            "storage": self.storage,
            "variant": self.variant,
            "objects": self.objects,
            "samples": [s.to_json() for s in self.samples],
        }


@dataclasses.dataclass(frozen=True)
class SweepRun:
    """A whole sweep: metadata and every point, in run order."""

    metadata: dict[str, Any]
    points: tuple[SweepPoint, ...]

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

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SWEEP_SCHEMA_VERSION,
            "kind": "sweep",
            "metadata": self.metadata,
            "results": [p.to_json() for p in self.points],
        }

    @classmethod
    def from_json(cls, data: Any) -> SweepRun:
        ok = isinstance(data, dict) and data.get("kind") == "sweep"
        version = data.get("schema_version") if ok else None
        if version != SWEEP_SCHEMA_VERSION:
            raise ResultsError(
                f"not a sweep result of schema_version {SWEEP_SCHEMA_VERSION} "
                f"(kind {data.get('kind') if isinstance(data, dict) else None!r}, "
                f"schema_version {version!r})"
            )
        try:
            points = tuple(
                SweepPoint(
                    storage=r["storage"],
                    variant=r["variant"],
                    objects=int(r["objects"]),
                    samples=tuple(SweepSample(**s) for s in r["samples"]),
                )
                for r in data["results"]
            )
        except (KeyError, TypeError, ValueError) as e:
            raise ResultsError(f"malformed sweep result: {e}") from None
        return cls(metadata=data.get("metadata", {}), points=points)

    @classmethod
    def load(cls, path: Path) -> SweepRun:
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
        except OSError as e:
            raise ResultsError(f"cannot read {path}: {e.strerror}") from None
        except json.JSONDecodeError as e:
            raise ResultsError(f"{path} is not JSON: {e}") from None
        return cls.from_json(data)


# -- running ------------------------------------------------------------------

#: The data set populated (untimed) before each trial: its capabilities are
#: what the committed steps order.
BASE_SPEC = DataSpec.for_size("small")


def make_steps(fab: VirtualFab, n: int, seed: int) -> list[ProcessStep]:
    """*n* new ProcessSteps ordering random capabilities of *fab*, with
    settings drawn inside each capability's ranges."""
    rng = random.Random(f"{seed}/sweep/{n}")
    capabilities = list(fab.library.capabilities.values())
    steps = []
    for _ in range(n):
        cap = rng.choice(capabilities)
        settings = {name: draw(rng, lo, hi) for name, (lo, hi) in cap.ranges.items()}
        steps.append(ProcessStep(cap, rng.randint(1, cap.lot_size), settings))
    return steps


def run_trial(
    factory: storages.StorageFactory,
    variant: str,
    objects: int,
    seed: int = DEFAULT_SEED,
    directory: Path | None = None,
) -> SweepSample:
    """One timed commit of *objects* steps in *variant*'s container, on a
    fresh database (closed, and any server stopped, whatever happens)."""
    build = VARIANTS[variant].build
    with tempfile.TemporaryDirectory(prefix="vfab-sweep-", dir=directory) as tmp:
        with factory.open(Path(tmp)) as store:
            store.reset()
            fab = dataset.populate(store, BASE_SPEC, seed)
            container = build(make_steps(fab, objects, seed))
            store.root()[SWEEP_KEY] = container
            store.transfer_counts()
            size0 = store.size_bytes()
            gc.collect()
            wall0, cpu0 = time.perf_counter(), time.process_time()
            store.commit()
            cpu1, wall1 = time.process_time(), time.perf_counter()
            counts = store.transfer_counts()
            size1 = store.size_bytes()
            store.abort()
    return SweepSample(
        wall_s=wall1 - wall0,
        cpu_s=cpu1 - cpu0,
        stores=None if counts is None else counts[1],
        bytes_written=None if size0 is None or size1 is None else size1 - size0,
    )


Progress = Callable[[str], None]


def run(config: SweepConfig, progress: Progress | None = None) -> SweepRun:
    """Every storage, transaction size and variant of *config*."""
    say = progress or (lambda line: None)
    points: list[SweepPoint] = []
    for name in config.storages:
        factory = storages.get(name, config.options)
        reason = factory.unavailable()
        if reason is not None:
            say(f"{name}: skipped ({reason})")
            continue
        for variant in config.variants:
            for _ in range(config.warmups):
                run_trial(factory, variant, min(config.objects), config.seed)
        for n in config.objects:
            for variant in config.variants:
                samples = tuple(
                    run_trial(factory, variant, n, config.seed)
                    for _ in range(config.repeat)
                )
                point = SweepPoint(name, variant, n, samples)
                points.append(point)
                wall = point.wall_us
                say(
                    f"{name} {variant} {n:,} objects: {wall.median:.1f} us/object "
                    f"wall, {point.cpu_us.median:.1f} CPU ({config.repeat} trial(s))"
                )
    return SweepRun(metadata=collect_metadata(config), points=tuple(points))


# -- report -------------------------------------------------------------------


def _cell(stats: Stats) -> str:
    return f"{stats.median:.1f} ±{stats.rsd * 100:.0f}%" + ("!" if stats.noisy else " ")


def tables(run: SweepRun) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, header, rows): wall and CPU cost per object, objects stored."""
    columns = run.columns
    header = ["objects/txn", *(f"{s} {v}" for s, v in columns)]
    n_trials = max((len(p.samples) for p in run.points), default=0)
    out = []
    for title, stat in (
        (f"commit wall time per object (us), median of {n_trials}", "wall_us"),
        ("commit CPU time per object (us), this process", "cpu_us"),
    ):
        rows = []
        for n in run.sizes:
            row = [f"{n:,}"]
            for s, v in columns:
                p = run.get(s, v, n)
                row.append(_cell(getattr(p, stat)) if p else "-")
            rows.append(row)
        if len(run.sizes) > 1:
            row = [f"{run.sizes[-1]:,} / {run.sizes[0]:,}"]
            for s, v in columns:
                lo, hi = run.get(s, v, run.sizes[0]), run.get(s, v, run.sizes[-1])
                if lo is None or hi is None:
                    row.append("-")
                    continue
                a, b = getattr(lo, stat).median, getattr(hi, stat).median
                row.append(f"x{b / a:.1f} " if a > 0 else "-")
            rows.append(row)
        out.append((title, header, rows))
    rows = []
    for n in run.sizes:
        row = [f"{n:,}"]
        for s, v in columns:
            p = run.get(s, v, n)
            row.append("-" if p is None or p.stores is None else f"{p.stores:,}")
        rows.append(row)
    out.append(("objects stored by the commit", header, rows))
    return out


def text(run: SweepRun) -> str:
    parts = []
    for title, header, rows in tables(run):
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
        lines = [title]
        for row in [header, *rows]:
            cells = [c.rjust(w) for c, w in zip(row, widths, strict=True)]
            lines.append("  ".join(cells).rstrip())
        parts.append("\n".join(lines))
    variants = "; ".join(
        f"{v.name}: {v.description}"
        for v in VARIANTS.values()
        if any(p.variant == v.name for p in run.points)
    )
    parts.append(
        f"{variants}.  ± is the standard deviation as % of the mean (! above "
        "10%); the last row of a cost table is its growth from the smallest "
        "to the largest transaction."
    )
    return "\n\n".join(parts) + "\n"


def plot(run: SweepRun, path: Path) -> None:
    """Cost per object (wall and CPU) against objects per transaction, log x,
    one line per storage and variant; error bars span the trials."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8), sharey=True)
    storages_seen = list(dict.fromkeys(p.storage for p in run.points))
    colours = {s: f"C{i}" for i, s in enumerate(storages_seen)}
    styles = {"btree": "-", "list": "--"}
    for ax, stat, title in (
        (axes[0], "wall_us", "commit wall time"),
        (axes[1], "cpu_us", "commit CPU time (client process)"),
    ):
        for s, v in run.columns:
            pts = [p for n in run.sizes if (p := run.get(s, v, n)) is not None]
            xs = [p.objects for p in pts]
            st: list[Stats] = [getattr(p, stat) for p in pts]
            ys = [x.median for x in st]
            err = [
                [y - x.minimum for y, x in zip(ys, st, strict=True)],
                [x.maximum - y for y, x in zip(ys, st, strict=True)],
            ]
            ax.errorbar(
                xs,
                ys,
                yerr=err,
                color=colours[s],
                linestyle=styles.get(v, ":"),
                marker="o",
                capsize=3,
                label=f"{s} {v}",
            )
        ax.set_xscale("log")
        ax.set_xlabel("objects per transaction")
        ax.set_title(title)
        ax.set_ylim(bottom=0)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("µs per object")
    axes[0].legend()
    versions = run.metadata.get("versions", {})
    fig.suptitle(
        "vfab-bench sweep: commit cost per object; solid = BTree, dashed = "
        f"flat PersistentList (ZODB {versions.get('ZODB', '?')})"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def parse_objects(text: str) -> tuple[int, ...]:
    """'100,1000,10k,5e4' -> (100, 1000, 10000, 50000); ValueError otherwise."""
    out = []
    for part in text.split(","):
        part = part.strip().lower().replace("_", "")
        if not part:
            continue
        mult = 1
        if part.endswith("k"):
            part, mult = part[:-1], 1000
        try:
            value = float(part) * mult
        except ValueError:
            raise ValueError(f"not a number of objects: {part!r}") from None
        if value != int(value) or value < 1:
            raise ValueError(f"not a whole number of objects: {part!r}")
        out.append(int(value))
    if not out:
        raise ValueError("no transaction size given")
    return tuple(out)
