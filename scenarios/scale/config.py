"""ScaleConfig: one `vfab-bench scale`, validated and frozen; Fault."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, ClassVar

from scenarios.errors import ConfigError
from scenarios.load.mix import LoadConfig
from storages.options import shown
from vfab.codec import Derived, Json
from vfab.generate import DEFAULT_SEED

DEFAULT_CLIENTS = (1, 2, 4, 8, 16)
#: Sub-windows of a point's measured window, each with its own throughput
#: and latencies: the spread between them is the point's interval, and two
#: runs' points are compared window against window (scale/compare.py).
DEFAULT_WINDOWS = 10
MAX_WINDOWS = 1000
#: A hard cap whatever the memory and the concurrency kind.
MAX_CLIENTS = 256
#: locust's port for its workers, and how long a master waits for them (and
#: a worker for its master) unless told otherwise.
MASTER_PORT = 5557
CONNECT_TIMEOUT_S = 60.0
#: The latest a fault may happen or a server restart (seconds): a week.
MAX_FAULT_S = 7 * 24 * 3600.0


@dataclasses.dataclass(frozen=True)
class Fault(Json):
    """kill-server at *at_s* seconds into the measured window (and, with
    *restart_s*, start it again that many seconds later), or kill-client
    (one client process, SIGKILL) at *at_s*."""

    kind: str
    at_s: float
    restart_s: float | None = None

    KINDS = ("kill-server", "kill-client")

    @classmethod
    def parse(cls, text: str) -> Fault:
        """'kill-server:AT[,restart:AFTER]' or 'kill-client:AT' (seconds)."""
        parts = [p.strip() for p in text.split(",") if p.strip()]
        usage = "expected kill-server:AT[,restart:AFTER] or kill-client:AT (seconds)"
        try:
            kind, _, at = parts[0].partition(":")
            restart = None
            for extra in parts[1:]:
                key, _, value = extra.partition(":")
                if key != "restart" or kind != "kill-server" or restart is not None:
                    raise ValueError(extra)
                restart = float(value)
            fault = cls(kind, float(at), restart)
        except (IndexError, ValueError):
            raise ConfigError(f"bad --fault {shown(text)}: {usage}") from None
        if kind not in cls.KINDS:
            raise ConfigError(f"bad --fault {shown(text)}: {usage}")
        times = (fault.at_s, *(() if restart is None else (restart,)))
        if not all(0 <= t <= MAX_FAULT_S for t in times):
            raise ConfigError(
                f"bad --fault {shown(text)}: times must be from 0 to "
                f"{MAX_FAULT_S:,.0f} s"
            )
        return fault


def _mix(load: LoadConfig) -> dict[str, Any]:
    """What a scale run records of its load: the mix, not the target."""
    return {
        "weights": dict(load.weights),
        **{k: getattr(load, k) for k in ("skew", "retries", "backoff_ms")},
    }


@dataclasses.dataclass(frozen=True)
class ScaleConfig(Derived):
    """Storages (registry names; "target" for --target), client counts, the
    data set, the window (warmup, then duration, seconds), the open loop's
    total *rate* (ops/s over all clients; None: closed loop), a fault, and
    the operation mix (its target is replaced per point)."""

    storages: tuple[str, ...]
    clients: tuple[int, ...] = DEFAULT_CLIENTS
    scale: int = 1
    seed: int = DEFAULT_SEED
    duration_s: float = 10.0
    warmup_s: float = 3.0
    rate: float | None = None
    fault: Fault | None = None
    load: LoadConfig = dataclasses.field(default_factory=LoadConfig)
    #: Seconds an operation waits for an absent server before failing.
    wait_timeout_s: float = 3.0
    #: Record every attempt's history and check the data against it after
    #: each point (scenarios.checker.consistency); False: the load alone.
    check: bool = True
    #: Read the storage's transaction log since the baseline in every
    #: check, to see another writer (verify); else only when a finding
    #: could depend on it (a ZEO server's log costs a round trip a
    #: transaction).
    read_log: bool = False
    windows: int = DEFAULT_WINDOWS
    #: How the clients run concurrently (scenarios.clients.concurrency), and how
    #: many share a process (None: threads and greenlets, all of a point's
    #: clients in one process per host).
    concurrency: str = "processes"
    clients_per_process: int | None = None
    #: Locust workers the clients run on (0: processes of this machine).
    workers: int = 0

    def __post_init__(self) -> None:
        if not self.storages:
            raise ConfigError("no storage to measure")
        if not self.clients or min(self.clients) < 1:
            raise ConfigError("--clients takes counts of 1 or more")
        if max(self.clients) > MAX_CLIENTS:
            raise ConfigError(
                f"{max(self.clients)} clients: at most {MAX_CLIENTS} "
                "(each client is a process)"
            )
        if not self.duration_s > 0:
            raise ConfigError("--duration must be more than 0 seconds")
        if not self.warmup_s >= 0:
            raise ConfigError("--warmup must be 0 seconds or more")
        if not 1 <= self.windows <= MAX_WINDOWS:
            raise ConfigError(f"--windows takes 1 to {MAX_WINDOWS}")
        from scenarios.clients.concurrency import check_kind

        check_kind(self.concurrency, self.clients_per_process)
        if self.clients_per_process is not None and not (
            1 <= self.clients_per_process <= MAX_CLIENTS
        ):
            raise ConfigError(f"--clients-per-process takes 1 to {MAX_CLIENTS}")
        if self.rate is not None and not self.rate > 0:
            raise ConfigError("--rate must be more than 0 operations per second")
        if self.fault is not None:
            if self.fault.at_s >= self.duration_s:
                raise ConfigError(
                    f"--fault at {self.fault.at_s:g} s is not inside the "
                    f"{self.duration_s:g} s window"
                )

    #: Its JSON (codec.derived): the fields, the load's mix among them,
    #: not whether the log is read.
    JSON_SKIP: ClassVar[tuple[str, ...]] = ("read_log",)
    JSON_FLAT: ClassVar[tuple[str, ...]] = ("load",)
    JSON_AS: ClassVar[dict[str, Callable[[Any], Any]]] = {"load": _mix}
