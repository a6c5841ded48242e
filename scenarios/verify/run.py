"""`vfab-bench verify`: is each shared storage right, before anyone asks
whether it is fast?

For each storage (every shared storage that runs here, or those named, or
a --target): the deterministic scenarios (scenarios.verify.scenarios) on a
fresh database, then a contended load at rising client counts (scale's
clients with a write-heavy mix and a steep skew, so that writers meet on
the same capabilities and labs), each point checked against the history of
every attempt (scenarios.load.consistency).  The load windows share the
time budget; starting servers, populating, the scenarios and the checks
come on top.
"""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import storages
from scenarios.errors import ConfigError
from scenarios.load.consistency import KINDS
from scenarios.load.history import Parts
from scenarios.load.mix import LoadConfig
from scenarios.progress import Progress, progress_of
from scenarios.scale import runner as scale_runner
from scenarios.scale.config import ScaleConfig
from scenarios.scale.results import ScalePoint
from storages import StorageOptions

Say = Callable[[str], None]

#: The operation mix of the contended load: every write and the audit,
#: few walks (they only take time from the writers).
CONTENTION = {
    "browse": 0,
    "lookup": 2,
    "create_sequence": 3,
    "change_price": 3,
    "list_sequences": 0,
    "read_sequence": 1,
    "transfer_wafers": 3,
    "audit_stock": 2,
}
#: Zipf exponent of the contended load: the most popular capability gets
#: about 60% of the picks of 250 (1.0 in scale: 16%).
CONTENTION_SKEW = 2.0
DEFAULT_CLIENTS = (2, 8, 16)
DEFAULT_BUDGET_S = 60.0
#: No load window is shorter than this, whatever the budget.
MIN_WINDOW_S = 2.0


@dataclasses.dataclass(frozen=True)
class VerifyConfig:
    """Storages (registry names; "target" for --target), client counts, the
    budget the load windows share, whether to run the scenarios, and the
    data set's scale and seed."""

    storages: tuple[str, ...]
    clients: tuple[int, ...] = DEFAULT_CLIENTS
    budget_s: float = DEFAULT_BUDGET_S
    scenarios: bool = True
    skew: float = CONTENTION_SKEW
    scale: int = 1
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.storages:
            raise ConfigError("no shared storage to verify")
        if not self.budget_s > 0:
            raise ConfigError("--budget must be more than 0 seconds")

    @property
    def window_s(self) -> float:
        """Each point's load window: the budget over every point."""
        points = len(self.storages) * len(self.clients)
        return max(MIN_WINDOW_S, self.budget_s / points)

    def scale_config(self, name: str) -> ScaleConfig:
        return ScaleConfig(
            storages=(name,),
            clients=self.clients,
            scale=self.scale,
            seed=self.seed,
            duration_s=self.window_s,
            warmup_s=0.5,
            load=LoadConfig.from_values(
                "127.0.0.1:8100", weights=CONTENTION, skew=self.skew
            ),
            check=True,
        )

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self) | {
            "weights": CONTENTION,
            "window_s": self.window_s,
        }


@dataclasses.dataclass(frozen=True)
class StorageVerdict:
    """What verify found on one storage: the scenarios' results and the
    load's points (their consistency checks inside)."""

    storage: str
    scenarios: tuple[Any, ...]  # scenarios.verify.scenarios.ScenarioResult
    points: tuple[ScalePoint, ...]

    def violations(self) -> dict[str, int]:
        out = dict.fromkeys(KINDS, 0)
        for p in self.points:
            for kind, n in p.invariants.get("counts", {}).items():
                out[kind] = out.get(kind, 0) + n
        return out

    def tally(self, key: str) -> int:
        return sum(p.invariants.get("tally", {}).get(key, 0) for p in self.points)

    @property
    def ok(self) -> bool | None:
        """False: something wrong; None: not everything could be checked."""
        if any(s.verdict == "violation" for s in self.scenarios):
            return False
        if any(p.invariants.get("ok") is False for p in self.points):
            return False
        if any(p.invariants.get("ok") is None for p in self.points):
            return None
        return True

    def to_json(self) -> dict[str, Any]:
        return {
            "storage": self.storage,
            "ok": self.ok,
            "violations": self.violations(),
            "scenarios": [s.to_json() for s in self.scenarios],
            "points": [p.to_json() for p in self.points],
        }


def run(
    config: VerifyConfig,
    options: StorageOptions,
    target: str | None = None,
    progress: Progress | Say | None = None,
    history: Parts | None = None,
) -> list[StorageVerdict]:
    """Every storage of *config*, in order: its scenarios one step of the
    progress, each load point one."""
    say = progress_of(progress, "verify", "steps")
    per_storage = len(config.clients) + bool(config.scenarios)
    say.plan(
        len(config.storages) * per_storage,
        unit_s=config.window_s + scale_runner.POINT_OVERHEAD_S,
    )
    out = []
    for name in config.storages:
        scenarios: list[Any] = []
        if config.scenarios:
            say.step(f"{name}: scenarios")
            say.line(f"{name}: scenarios", counted=True)
            scenarios = _scenarios(name, options, target)
            say.advance()
            for s in scenarios:
                say(f"  {s.name}: {s.verdict}")
        say(f"{name}: contended load, {config.window_s:.1f} s per point")
        points = scale_runner.run(
            config.scale_config(name), options, target, say, history
        )
        out.append(StorageVerdict(name, tuple(scenarios), tuple(points)))
    return out


def _scenarios(name: str, options: StorageOptions, target: str | None) -> list[Any]:
    from scenarios.verify.scenarios import run_scenarios

    with _database(name, options, target) as spec:
        return run_scenarios(spec)


@contextlib.contextmanager
def _database(name: str, options: StorageOptions, target: str | None) -> Iterator[str]:
    """The client spec of a fresh shared database of storage *name* (or of
    the target, whose scenarios write under their own root key)."""
    if name == scale_runner.TARGET:
        assert target is not None
        yield target
        return
    factory = storages.get(name, options)
    scratch = Path(tempfile.mkdtemp(prefix="vfab-verify-"))
    try:
        with factory.running():
            data = scratch / "data"
            data.mkdir()
            with factory.share(data) as shared:
                yield shared.client
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
