"""The operation mix: what a simulated user does and how often.

The table of operations with their default weights (each a function of the
user's Session, run inside its transaction), the validated LoadConfig every
user of a run shares, and the Popularity that makes concurrent writers meet.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import random
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from scenarios.errors import ConfigError
from scenarios.load.target import describe, normalize, zeo_address
from vfab import operations
from vfab.model import VirtualFab


class User(Protocol):
    """What an operation needs of the user running it (scenarios.load.session.
    Session, inside its transaction)."""

    rng: random.Random
    login: str
    group_names: list[str]

    @property
    def fab(self) -> VirtualFab: ...

    def popular_capability(self) -> int: ...

    def popular_pair(self) -> tuple[int, int]: ...


#: Where `vfab-bench serve` listens and the clients look by default (ZEO's
#: customary port).
DEFAULT_ADDRESS = "127.0.0.1:8100"


@dataclasses.dataclass(frozen=True)
class Operation:
    """One kind of request: its name (the locust request name and the key of
    its weight option), its default weight, whether it writes, and what it
    does inside the session's transaction (returning a receipt for writes)."""

    name: str
    weight: int
    writes: bool
    run: Callable[[User], Any]
    description: str


def _browse(s: User) -> Any:
    return operations.browse(s.fab, s.rng)


def _lookup(s: User) -> Any:
    return operations.looked(
        operations.lookup_capability(s.fab, s.popular_capability())
    )


def _match(s: User) -> Any:
    return operations.match_price(s.fab, *s.popular_pair())


def _reprice_pair(s: User) -> Any:
    return operations.reprice_pair(s.fab, *s.popular_pair(), s.rng)


def _compare(s: User) -> Any:
    return operations.compare_offers(s.fab, *s.popular_pair())


def _create(s: User) -> Any:
    owner = s.fab.directory.users[s.login]
    return operations.create_sequence(s.fab, owner, s.rng)


def _reprice(s: User) -> Any:
    return operations.change_price(s.fab, s.popular_capability(), s.rng)


def _list(s: User) -> Any:
    return operations.list_group_sequences(s.fab, s.rng.choice(s.group_names))


def _read(s: User) -> Any:
    fab = s.fab
    page = operations.read_sequence(fab, operations.some_sequence_id(fab, s.rng))
    return operations.sequence_read(page)


def _transfer(s: User) -> Any:
    return operations.transfer_wafers(s.fab, s.rng)


def _audit(s: User) -> Any:
    return operations.audit_stock(s.fab)


#: Every operation, in the order of option lists and reports.
OPERATIONS: tuple[Operation, ...] = (
    Operation("browse", 3, False, _browse, "one question of the library (a walk)"),
    Operation("lookup", 10, False, _lookup, "one capability by id (skewed)"),
    Operation("create_sequence", 2, True, _create, "order a new sequence of steps"),
    Operation("change_price", 2, True, _reprice, "reprice a capability (skewed)"),
    Operation("list_sequences", 2, False, _list, "the sequences of one group (a walk)"),
    Operation("read_sequence", 5, False, _read, "one whole sequence with its steps"),
    Operation(
        "transfer_wafers", 1, True, _transfer, "move wafer stock between two labs"
    ),
    Operation("audit_stock", 1, False, _audit, "sum every lab's stock (one snapshot)"),
    # Off by default (scale's and locust's figures keep their mix); verify
    # runs them: each shows an anomaly the others cannot.
    Operation(
        "match_price",
        0,
        True,
        _match,
        "reprice to a rival's price, read with readCurrent (write skew)",
    ),
    Operation(
        "reprice_pair", 0, True, _reprice_pair, "reprice two capabilities at once"
    ),
    Operation(
        "compare_offers", 0, False, _compare, "read two capabilities in one snapshot"
    ),
)
BY_NAME: dict[str, Operation] = {op.name: op for op in OPERATIONS}


@dataclasses.dataclass(frozen=True)
class LoadConfig:
    """What every simulated user of one run does, validated.

    target: the database the users share, as a client spec
    (scenarios.load.target: ``zeo://HOST:PORT``, another zodburi URI or
    ZConfig text).  weights: operation name -> relative weight
    (0 switches it off).  skew: Zipf exponent for picking capabilities by
    popularity (0: uniform; 1: the top one of 250 gets about 16% of picks).
    retries: attempts after a conflict before the operation fails.
    backoff_ms: first retry waits up to this long (full jitter), doubling
    each attempt up to 64 times it.  server_sync: a ZEO server named by
    HOST:PORT is opened with server_sync (verify: the strongest promise
    ZEO makes is checked; scale and locust keep ZEO's default, off, and
    their checks count the stale reads it allows).
    """

    target: str = normalize(DEFAULT_ADDRESS)
    weights: tuple[tuple[str, int], ...] = tuple(
        (op.name, op.weight) for op in OPERATIONS
    )
    skew: float = 1.0
    retries: int = 10
    backoff_ms: float = 5.0
    server_sync: bool = False

    def __post_init__(self) -> None:
        names = [name for name, _ in self.weights]
        for name in names:
            if name not in BY_NAME:
                raise ConfigError(
                    f"unknown operation {name!r}; choose from {', '.join(BY_NAME)}"
                )
        for name, weight in self.weights:
            if weight < 0:
                raise ConfigError(f"weight of {name} must be 0 or more, not {weight}")
        if not any(weight for _, weight in self.weights):
            raise ConfigError("every operation has weight 0: nothing to do")
        if not self.skew >= 0:
            raise ConfigError(f"skew must be 0 or more, not {self.skew}")
        if self.retries < 0:
            raise ConfigError(f"retries must be 0 or more, not {self.retries}")
        if not self.backoff_ms >= 0:
            raise ConfigError(f"backoff must be 0 ms or more, not {self.backoff_ms}")

    @classmethod
    def from_values(
        cls,
        target: str | tuple[str, int],
        weights: Mapping[str, int] | None = None,
        skew: float = 1.0,
        retries: int = 10,
        backoff_ms: float = 5.0,
    ) -> LoadConfig:
        """Build from loosely typed values (command line, web UI form);
        ConfigError or StorageError for anything wrong, naming it."""
        if not isinstance(target, str):
            target = f"{target[0]}:{target[1]}"
        merged = {op.name: op.weight for op in OPERATIONS}
        merged.update(weights or {})
        return cls(
            target=normalize(target),
            weights=tuple(merged.items()),
            skew=float(skew),
            retries=int(retries),
            backoff_ms=float(backoff_ms),
        )

    @property
    def address_text(self) -> str:
        """The target for messages: HOST:PORT for a ZEO server over TCP."""
        address = zeo_address(self.target)
        return f"{address[0]}:{address[1]}" if address else describe(self.target)

    def picker(self) -> Callable[[random.Random], Operation]:
        """A function drawing the next operation by weight."""
        ops = [BY_NAME[name] for name, weight in self.weights if weight]
        cum = list(itertools.accumulate(weight for _, weight in self.weights if weight))

        def pick(rng: random.Random) -> Operation:
            return ops[bisect.bisect_right(cum, rng.random() * cum[-1])]

        return pick


class Popularity:
    """Ids 1..n drawn with Zipf weights 1/k**skew (skew 0: uniform), so that
    capability 1 is the most wanted and concurrent writers meet there."""

    def __init__(self, n: int, skew: float) -> None:
        self.n = n
        self.skew = skew
        self._cum = (
            list(itertools.accumulate(1.0 / k**skew for k in range(1, n + 1)))
            if skew
            else []
        )

    def sample(self, rng: random.Random) -> int:
        if not self._cum:
            return rng.randint(1, self.n)
        i = bisect.bisect_right(self._cum, rng.random() * self._cum[-1])
        return min(i, self.n - 1) + 1

    def share_of_top(self) -> float:
        """The probability of drawing id 1."""
        return 1.0 / self.n if not self._cum else 1.0 / self._cum[-1]
