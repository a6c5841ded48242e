"""`vfab-bench verify`: is each shared storage right, before anyone asks
whether it is fast?

For each storage (every shared storage that runs here, or those named, or
a --target): the deterministic scenarios (scenarios.verify.scenarios) on a
fresh database, then a contended load at rising client counts (scale's
clients with a write-heavy mix, the pairs that show a write skew and a
read outside its snapshot, and a steep skew, so that writers meet on the
same capabilities and labs; ZEO clients with server_sync, so its strongest
promise is the one checked), each point checked against the history of
every attempt (scenarios.checker.consistency).  The load windows share the
time budget; starting servers, populating, the scenarios and the checks
come on top, and the plan says how long they take (estimate()).

Each storage ends with one verdict (StorageVerdict.verdict): right, WRONG,
not fully checked, or errors, with why.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import storages
from scenarios.checker.consistency import KINDS
from scenarios.checker.known_bugs import KNOWN_WRONG, known_bug
from scenarios.checker.words import allowed_words, wrong_words
from scenarios.errors import ConfigError
from scenarios.interrupts import remove_tree
from scenarios.load.history import Parts
from scenarios.load.mix import LoadConfig
from scenarios.progress import Machine, Progress, duration, machine_now, progress_of
from scenarios.results.formatter import plural
from scenarios.scale import runner as scale_runner
from scenarios.scale.config import ScaleConfig
from scenarios.scale.model import ScalePoint
from storages import StorageOptions
from vfab.codec import Derived

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
    # a write skew that readCurrent must stop, and a pair of registers
    # written together with their reader (a read outside its snapshot)
    "match_price": 2,
    "reprice_pair": 2,
    "compare_offers": 2,
}
#: Zipf exponent of the contended load: the most popular capability gets
#: about 60% of the picks of 250 (1.0 in scale: 16%).
CONTENTION_SKEW = 2.0
DEFAULT_CLIENTS = (2, 8, 16)
DEFAULT_BUDGET_S = 60.0
#: No load window is shorter than this, whatever the budget.
MIN_WINDOW_S = 2.0
#: Seconds planned for what comes beside the load windows (the plan the
#: first line prints, and the ETA's prior: it then follows the steps' own
#: times, the prior weighing a tenth): a storage's deterministic scenarios
#: (two child processes, a dozen commits), the start of a client process
#: (an interpreter importing ZODB), populating a fresh database and the
#: check of a point; measured on a busy 2-core machine (5 storages, 2 and
#: 8 clients, 4 s windows: 72 s in all).  CHECK_PER_CLIENT_S and SERVER_S
#: are estimates not yet measured idle: the plan should be within 20% of
#: a default run on an idle machine, which `verify --json` measures (its
#: last line, and each step's time in the JSON: docs/consistency.md).
SCENARIOS_S = 5.0
CLIENT_START_S = 0.3
POPULATE_S = 1.5
CHECK_S = 1.0
#: The check's cost grows with the history, about with the clients.
CHECK_PER_CLIENT_S = 0.05
#: A point's fresh shared database: its server (runzeo, or a database on
#: the storage's server) started and stopped.
SERVER_S = 0.5
#: Each point's warmup before its window.
WARMUP_S = 0.5
#: The verdicts, in the order of the summary's precedence.
RIGHT, WRONG, UNCHECKED, ERRORS = "right", "WRONG", "not fully checked", "errors"


@dataclasses.dataclass(frozen=True)
class VerifyConfig(Derived):
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

    #: Its JSON (codec.derived): the fields, the load's weights and window.
    weights: ClassVar[dict[str, int]] = CONTENTION
    JSON_EXTRA: ClassVar[tuple[str, ...]] = ("weights", "window_s")

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

    def point_s(self, clients: int, factor: float = 1.0) -> float:
        """Seconds a point of *clients* clients is planned to take on a
        machine *factor* times slower than an idle one (progress.Machine):
        its start and check scale, its load window does not (it is spent in
        full, however fast the machine)."""
        check = CHECK_S + clients * CHECK_PER_CLIENT_S
        start = SERVER_S + POPULATE_S + clients * CLIENT_START_S
        return (start + check) * factor + WARMUP_S + self.window_s

    def storage_s(self, factor: float = 1.0) -> float:
        """Seconds one storage is planned to take: its servers, its
        scenarios, its points (*factor*: as point_s)."""
        out = sum(self.point_s(n, factor) for n in self.clients)
        return out + (SCENARIOS_S * factor if self.scenarios else 0.0)

    def estimate(self, factor: float = 1.0) -> tuple[float, float]:
        """(seconds of load windows, seconds of everything else) the run is
        planned to take (*factor*: as point_s)."""
        windows = self.window_s * len(self.clients) * len(self.storages)
        return windows, self.storage_s(factor) * len(self.storages) - windows

    def steps(self, factor: float = 1.0) -> list[tuple[str, float]]:
        """The progress's steps, in order: (label, seconds planned)."""
        out = []
        for name in self.storages:
            if self.scenarios:
                out.append((f"{name}: scenarios", SCENARIOS_S * factor))
            out += [
                (f"{name}: {plural(n, 'client')}", self.point_s(n, factor))
                for n in self.clients
            ]
        return out

    def plan(self, factor: float = 1.0) -> str:
        """What the run will do and about how long it takes, in two lines."""
        windows, rest = self.estimate(factor)
        return (
            f"verify: about {duration(windows + rest)} in all: "
            f"{plural(len(self.storages), 'storage')} x "
            f"{plural(len(self.clients), 'client count')}, load windows of "
            f"{self.window_s:.1f} s ({windows:.0f} s in all),\n"
            f"  servers, scenarios, clients and checks about {rest:.0f} s more"
        )

    def scale_config(self, name: str) -> ScaleConfig:
        return ScaleConfig(
            storages=(name,),
            clients=self.clients,
            scale=self.scale,
            seed=self.seed,
            duration_s=self.window_s,
            warmup_s=WARMUP_S,
            read_log=True,
            load=dataclasses.replace(
                LoadConfig.from_values(
                    "127.0.0.1:8100", weights=CONTENTION, skew=self.skew
                ),
                server_sync=True,
            ),
            check=True,
        )


@dataclasses.dataclass(frozen=True)
class StorageVerdict:
    """What verify found on one storage: the scenarios' results and the
    load's points (their consistency checks inside)."""

    storage: str
    scenarios: tuple[Any, ...]  # scenarios.verify.scenarios.ScenarioResult
    points: tuple[ScalePoint, ...]
    #: the client spec of a --target (to name a known upstream bug)
    target: str | None = None
    #: seconds the storage was planned to take, and took
    planned_s: float = 0.0
    took_s: float = 0.0
    #: each step of the progress: (label, seconds planned, seconds taken),
    #: what a plan is adjusted from (docs/consistency.md)
    steps: tuple[tuple[str, float, float], ...] = ()

    def violations(self) -> dict[str, int]:
        out = dict.fromkeys(KINDS, 0)
        for p in self.points:
            for kind, n in p.check.counts.items():
                out[kind] = out.get(kind, 0) + n
        return out

    def tally(self, key: str) -> int:
        return sum(p.check.tally.get(key, 0) for p in self.points)

    def errors(self) -> dict[str, int]:
        """Operations that raised, by exception class, over the points.
        Running out of retries is not one: the contended load is made for
        conflicts (the table counts them as failed)."""
        out: dict[str, int] = {}
        for p in self.points:
            for kind, n in p.errors.items():
                out[kind] = out.get(kind, 0) + n
        return out

    def verdict(self) -> tuple[str, str]:
        """(right, WRONG, not fully checked or errors; why, in words)."""
        wrong = [s.name for s in self.scenarios if s.verdict == "violation"]
        counts = {k: n for k, n in self.violations().items() if n}
        if wrong or any(p.check.ok is False for p in self.points):
            parts = [f"{name}: violation" for name in wrong]
            if counts:
                names = "; ".join(plural(n, kind) for kind, n in counts.items())
                parts.append(
                    f"the data did not stay right: {wrong_words(counts)} ({names})"
                )
            bug = known_bug(self.storage, self.target)
            return WRONG, "; ".join(parts) + (f" ({bug})" if bug else "")
        unchecked = [
            f"{s.name} not run" for s in self.scenarios if s.verdict == "not run"
        ]
        for p in self.points:
            if p.check.ok is None:
                unchecked += [f"{p.clients} clients: {w}" for w in p.check.why_not]
            if p.started < p.clients:
                unchecked.append(
                    f"{p.clients} clients: only {p.started} started (no contention "
                    "among the others)"
                )
        if not self.points:
            unchecked.append("no load point ran")
        if unchecked:
            return UNCHECKED, "; ".join(unchecked)
        errors = self.errors()
        if errors:
            shown = ", ".join(f"{n} {kind}" for kind, n in sorted(errors.items()))
            return ERRORS, f"no violation, but operations raised: {shown}"
        levels = sorted({p.check.level or "" for p in self.points} - {""})
        allowed: dict[str, int] = {}
        for p in self.points:
            for anomaly, n in (p.check.allowed or {}).items():
                allowed[anomaly] = allowed.get(anomaly, 0) + n
        said = allowed_words(allowed, self.storage)
        attempts = self.tally("attempts")
        return RIGHT, (
            f"every read saw a committed state ({attempts:,} attempts checked)"
            + (f"; {said}" if said else "")
            + (f"; the history is {' / '.join(levels)}" if levels else "")
        )

    def known_bug(self) -> str | None:
        """The known upstream bug that explains a WRONG verdict, or None."""
        if self.verdict()[0] != WRONG:
            return None
        return known_bug(self.storage, self.target)

    def state(self) -> str:
        """The verdict's word, KNOWN_WRONG for a WRONG a known upstream bug
        explains (scenarios.checker.known_bugs.exit_status: not the status)."""
        word = self.verdict()[0]
        return KNOWN_WRONG if word == WRONG and self.known_bug() else word

    @property
    def ok(self) -> bool | None:
        """What the text says: True right, False WRONG, None otherwise (not
        fully checked, or errors)."""
        word = self.verdict()[0]
        return True if word == RIGHT else False if word == WRONG else None

    def to_json(self) -> dict[str, Any]:
        word, why = self.verdict()
        return {
            "storage": self.storage,
            "ok": self.ok,
            "verdict": word,
            "why": why,
            "known_bug": self.known_bug(),
            "planned_s": round(self.planned_s, 1),
            "took_s": round(self.took_s, 1),
            "steps": [
                {"step": label, "planned_s": round(plan, 1), "took_s": round(took, 1)}
                for label, plan, took in self.steps
            ],
            "errors": self.errors(),
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
    machine: Machine | None = None,
) -> list[StorageVerdict]:
    """Every storage of *config*, in order: its scenarios one step of the
    progress, each load point one, each weighted by the seconds it is
    planned to take on this machine now (*machine*: its speed probe and
    load, measured when None: what is not a load window scales with it),
    so that the ETA starts from what this machine will take and follows
    what the steps really took."""
    say = progress_of(progress, "verify", "s planned")
    machine = machine_now() if machine is None else machine
    factor = machine.factor
    windows, rest = config.estimate(factor)
    say.plan(windows + rest, unit_s=1.0)
    say(config.plan(factor))
    if abs(factor - 1.0) > 0.2:
        say(f"  set-up and checks planned at {machine.words()}")
    out = []
    for name in config.storages:
        started = time.monotonic()
        scenarios: list[Any] = []
        if config.scenarios:
            say.step(f"{name}: scenarios", SCENARIOS_S * factor)
            say.line(f"{name}: scenarios", counted=True)
            scenarios = _scenarios(name, options, target)
            say.advance()
            bug = known_bug(name, target)
            for s in scenarios:
                known = (
                    " (known upstream bug)" if bug and s.verdict == "violation" else ""
                )
                say(f"  {s.name}: {s.verdict}{known}")
        say(f"{name}: contended load, {config.window_s:.1f} s per point")
        points = scale_runner.run(
            config.scale_config(name),
            options,
            target,
            say,
            history,
            functools.partial(config.point_s, factor=factor),
        )
        took = time.monotonic() - started
        steps = tuple(step for step in say.steps if step[0].startswith(f"{name}:"))
        out.append(
            StorageVerdict(
                name,
                tuple(scenarios),
                tuple(points),
                target,
                planned_s=config.storage_s(factor),
                took_s=took,
                steps=steps,
            )
        )
    return out


def _scenarios(name: str, options: StorageOptions, target: str | None) -> list[Any]:
    import secrets

    from scenarios.verify.scenarios import run_scenarios

    with _database(name, options, target) as spec:
        # A target may be verified by others at once: areas of this run's own.
        return run_scenarios(spec, secrets.token_hex(4) if target else "")


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
        remove_tree(scratch)
