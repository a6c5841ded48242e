"""The rounds of `vfab-bench ab`: both environments prepared, a worker
started in each, then pairs of trials.

interleaved (RMIT, Abedi and Brecht 2017): each round runs A's and B's
trial k one after the other, in an order drawn at random per round and
source (seeded), so neither always runs first after the other.
duet (Bulej et al. 2020): each worker is pinned to a core of its own and
A's and B's trial k start together; the next pair starts when both are
done.  Either way the workers are stopped on every exit.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import os
import platform
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scenarios.ab import envs
from scenarios.ab.cells import SOURCES
from scenarios.ab.defaults import (
    DEFAULT_CELLS,
    DEFAULT_PAIRS,
    DEFAULT_STORAGES,
    DEFAULT_WARMUPS,
    MODES,
)
from scenarios.ab.model import ABRun, PairedCell, SideInfo
from scenarios.ab.params import encoded_options
from scenarios.ab.sides import SETUP_S, TRIAL_S, Side
from scenarios.bench.config import check_storage_names, scale_for
from scenarios.errors import ConfigError, RunFailure
from scenarios.interrupts import scratch_directory
from scenarios.results import environment as machine
from scenarios.results.metadata import project_code
from storages import StorageOptions, options_json

#: Storage options that name a server, a port or a database the suite did
#: not create: both sides would share it (one database for two sides'
#: writes, a server running neither side's code) or collide (one port).
SHARED_OPTIONS = ("storage_config", "storage_uri", "pack")
SHARED_SUFFIXES = ("_address", "_port", "_dsn")

Say = Callable[[str], None]


@dataclasses.dataclass(frozen=True)
class ABConfig:
    """Everything that decides what `ab` measures; checked when made."""

    a: str
    b: str
    mode: str = "interleaved"
    cells: tuple[str, ...] = DEFAULT_CELLS
    storages: tuple[str, ...] = DEFAULT_STORAGES
    pairs: int = DEFAULT_PAIRS
    warmups: int = DEFAULT_WARMUPS
    quick: bool = False
    size: str = "small"
    seed: int = 0
    cache: Path = dataclasses.field(default_factory=envs.default_cache)
    options: StorageOptions = StorageOptions()

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ConfigError(
                f"unknown mode {self.mode!r}; choose from {', '.join(MODES)}"
            )
        unknown = [c for c in self.cells if c not in SOURCES]
        if unknown or not self.cells:
            raise ConfigError(
                f"unknown cells {', '.join(unknown) or '(none)'}; choose from "
                f"{', '.join(SOURCES)}"
            )
        check_storage_names(self.storages, self.options)
        shared = shared_options(self.options)
        if shared:
            raise ConfigError(
                f"{', '.join(shared)}: ab starts each side's own servers and "
                "databases; one both sides share would be neither's"
            )
        if self.pairs < 1 or self.warmups < 0:
            raise ConfigError("--pairs must be 1 or more, --warmups 0 or more")
        scale_for(self.size, None)
        if self.mode == "duet" and len(os.sched_getaffinity(0)) < 2:
            raise ConfigError("duet mode needs two cores; this process may use one")
        from scenarios.ab.clientcells import CHECKS

        for source in self.cells:
            if source in CHECKS:
                CHECKS[source](self.params(source))

    def params(self, source: str) -> dict[str, Any]:
        """What the workers build *source* from (the same on both sides)."""
        return {
            "storages": list(self.storages),
            "scale": scale_for(self.size, None),
            "quick": self.quick,
            "options": encoded_options(self.options),
        }

    def to_json(self) -> dict[str, Any]:
        out = {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.name != "options"
        }
        out["cache"] = str(self.cache)
        out["options"] = options_json(self.options)
        return out


def shared_options(options: StorageOptions) -> list[str]:
    """The options in *options* that name something both sides would share,
    as flags."""
    return [
        "--" + name.replace("_", "-")
        for name, value in options_json(options).items()
        if value and (name in SHARED_OPTIONS or name.endswith(SHARED_SUFFIXES))
    ]


def prepare(config: ABConfig, say: Say) -> tuple[envs.Env, envs.Env]:
    """Both environments read, then built (or found in the cache): bad
    input of either side is refused before anything is built."""
    specs = (envs.parse(config.a, "A"), envs.parse(config.b, "B"))
    project = envs.project_requirements(config.storages, "micro" in config.cells)
    return (
        envs.prepare(specs[0], "A", project, config.cache, say),
        envs.prepare(specs[1], "B", project, config.cache, say),
    )


def run(config: ABConfig, say: Say) -> ABRun:
    """Prepare both sides, then the pairs; the workers stopped on any exit."""
    env_a, env_b = prepare(config, say)
    start = machine.snapshot()
    duet = config.mode == "duet"
    cpus = sorted(os.sched_getaffinity(0))
    with scratch_directory("vfab-ab-") as scratch, contextlib.ExitStack() as stack:
        sides = (
            Side("A", env_a, scratch / "A.log", cpus[0] if duet else None),
            Side("B", env_b, scratch / "B.log", cpus[1] if duet else None),
        )
        for side in sides:
            stack.callback(side.stop)
            side.start()
            for source, module in (side.hello.get("missing") or {}).items():
                if source in config.cells:
                    raise ConfigError(
                        f"{side.name}: {side.env.root} has no {module}, which "
                        f"--cells {source} needs (name requirements to build one)"
                    )
        setup = {"op": "setup", "sources": {c: config.params(c) for c in config.cells}}
        # Both set up at once (servers started), then said: what cannot run
        # is refused before any line of progress.
        for side in sides:
            side.send(setup)
        for side in sides:
            side.receive(SETUP_S, "setting up")
        say(f"A and B ready: {', '.join(config.cells)} on {', '.join(config.storages)}")
        rounds = Rounds(config, sides, say)
        rounds.run()
    metadata = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec="seconds"
        ),
        "host": {"hostname": platform.node(), "cpu_count": os.cpu_count()},
        "command": sys.argv,
        "config": config.to_json(),
        "environment": machine.finish(start),
        "unmatched": sorted(rounds.unmatched),
        "measuring_code": {"path": str(envs.PROJECT_ROOT), **project_code()},
    }
    return ABRun(
        mode=config.mode,
        a=side_info(sides[0]),
        b=side_info(sides[1]),
        cells=rounds.cells(),
        metadata=metadata,
        first=tuple(rounds.first),
        overlap=tuple(rounds.overlap),
    )


def side_info(side: Side) -> SideInfo:
    env = side.env
    return SideInfo(
        name=side.name,
        kind=env.spec.kind,
        text=env.spec.text,
        python=str(env.python),
        key=env.key,
        built_now=env.built_now,
        hello=side.hello,
        code=env.spec.code,
    )


class Rounds:
    """The warmups and the pairs, their samples gathered per cell."""

    def __init__(self, config: ABConfig, sides: tuple[Side, Side], say: Say) -> None:
        self.config = config
        self.sides = sides
        self.say = say
        self.random = random.Random(config.seed)
        #: {(source, column, row): ([A's], [B's])}
        self.samples: dict[tuple[str, str, str], tuple[list[float], list[float]]] = {}
        self.unmatched: set[str] = set()
        self.first: list[str] = []
        self.overlap: list[float] = []

    def run(self) -> None:
        total = self.config.warmups + self.config.pairs
        for k in range(total):
            timed = k >= self.config.warmups
            what = (
                f"pair {k - self.config.warmups + 1} of {self.config.pairs}"
                if timed
                else f"warmup {k + 1}"
            )
            self.say(f"{what} ({self.config.mode})")
            for source in self.config.cells:
                replies = self.pair(source, k)
                if timed:
                    self.keep(source, replies)

    def pair(self, source: str, k: int) -> tuple[dict[str, Any], dict[str, Any]]:
        """A's and B's trial k of *source*: (A's reply, B's reply)."""
        request = {"op": "trial", "source": source, "k": k}
        what = f"trial {k} of {source}"
        a, b = self.sides
        if self.config.mode == "duet":
            a.send(request)
            b.send(request)
            ra, rb = a.receive(TRIAL_S, what), b.receive(TRIAL_S, what)
            if k >= self.config.warmups:
                self.overlap.append(overlap(ra, rb))
            return ra, rb
        order = [a, b] if self.random.random() < 0.5 else [b, a]
        replies = {}
        for side in order:
            side.send(request)
            replies[side.name] = side.receive(TRIAL_S, what)
        if k >= self.config.warmups:
            self.first.append(order[0].name)
        return replies["A"], replies["B"]

    def keep(self, source: str, replies: tuple[dict[str, Any], dict[str, Any]]) -> None:
        ra, rb = ({(c, r): s for c, r, s in reply["cells"]} for reply in replies)
        for cell in ra.keys() | rb.keys():
            if cell not in ra or cell not in rb:
                where = "A" if cell in ra else "B"
                self.unmatched.add(f"{source} {cell[0]} {cell[1]} (only on {where})")
                continue
            a, b = self.samples.setdefault((source, *cell), ([], []))
            a.append(float(ra[cell]))
            b.append(float(rb[cell]))

    def cells(self) -> tuple[PairedCell, ...]:
        if not self.samples:
            raise RunFailure("no cell was measured on both sides")
        return tuple(
            PairedCell(source, column, row, tuple(a), tuple(b))
            for (source, column, row), (a, b) in self.samples.items()
            # A cell missing from some pairs is not paired: left out, said.
            if len(a) == self.config.pairs
        )


def overlap(ra: dict[str, Any], rb: dict[str, Any]) -> float:
    """The share of the shorter of two trials during which both ran."""
    both = min(ra["end"], rb["end"]) - max(ra["start"], rb["start"])
    shorter = min(ra["end"] - ra["start"], rb["end"] - rb["start"])
    return max(0.0, both) / shorter if shorter > 0 else 0.0
