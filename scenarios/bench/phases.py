"""The phases: the eight rows of the 2000 table in its order, then the rows
that show why a number is what it is (each query brute-force and indexed,
cold, warm and hot; an update, its commit, pack).  A phase is a plain
function of the trial's state; what it needs but does not measure happens
before the clock starts, in its *prepare* (cache states: docs/internals.md).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable
from typing import Any

from scenarios.data import FAB_KEY
from scenarios.data.batching import Batcher
from storages import Store
from vfab import generate, queries, updates
from vfab.generate import DataSpec, ShippedCatalogue
from vfab.model import VirtualFab

#: The connection cache target, in objects, while a hot row runs: large
#: enough that nothing a query touched is ghosted at a transaction boundary.
HOT_CACHE_SIZE = 1 << 30


@dataclasses.dataclass
class TrialState:
    """What one trial's phases share: the store, the spec, the answers the
    query phases found (kept so tests and checks can compare them) and the
    batcher the builders report their objects to (*batch* objects per
    transaction; 0: one transaction per phase)."""

    store: Store
    spec: DataSpec
    seed: int
    catalogue: ShippedCatalogue
    answers: dict[str, Any] = dataclasses.field(default_factory=dict)
    batch: int = 0
    #: {phase name -> digest of its answer}, for every query row (see digest).
    digests: dict[str, str] = dataclasses.field(default_factory=dict)
    batcher: Batcher = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        self.batcher = Batcher(self.store, self.batch)

    @property
    def fab(self) -> VirtualFab:
        return self.store.root()[FAB_KEY]  # type: ignore[no-any-return]


def digest(answer: Any) -> str:
    """A short fingerprint of a query's answer (plain values: their repr is
    deterministic), so that answers can be compared without keeping the
    answers of every row in memory (they hold every id at xlarge)."""
    return hashlib.sha256(repr(answer).encode()).hexdigest()[:16]


def create_users_groups(state: TrialState) -> None:
    fab = VirtualFab()
    state.store.root()[FAB_KEY] = fab
    generate.create_users_groups(fab, state.spec, state.seed, state.batcher)


def convert_processes(state: TrialState) -> None:
    generate.convert_processes(
        state.fab, state.spec, state.seed, state.catalogue, state.batcher
    )


def generate_sequences(state: TrialState) -> None:
    generate.generate_sequences(state.fab, state.spec, state.seed, state.batcher)


def commit(state: TrialState) -> None:
    state.store.commit()


def update_prices(state: TrialState) -> None:
    updates.reprice(state.fab, state.seed, checkpoint=state.batcher)


def pack(state: TrialState) -> None:
    state.store.pack()


def can_pack(store: Store) -> bool:
    return store.can_pack


Query = Callable[[VirtualFab], Any]


def asking(name: str, query: Query) -> Callable[[TrialState], None]:
    """A phase function recording *query*'s answer under the phase's name."""

    def run(state: TrialState) -> None:
        state.answers[name] = query(state.fab)

    run.__name__ = run.__qualname__ = query.__name__
    return run


def cold(state: TrialState) -> None:
    state.store.reopen()


def warm(state: TrialState) -> None:
    store = state.store
    store.set_cache_size(None)
    store.abort()
    store.minimize_cache()


def hot(query: Query) -> Callable[[TrialState], None]:
    def prepare(state: TrialState) -> None:
        store = state.store
        store.set_cache_size(HOT_CACHE_SIZE)
        store.abort()
        query(state.fab)
        store.abort()

    return prepare


def back_to_configured_cache(state: TrialState) -> None:
    state.store.set_cache_size(None)
    state.store.abort()


@dataclasses.dataclass(frozen=True)
class Phase:
    """A row of the report.  *prepare*, when given, runs untimed just before
    *run*; a phase whose *applies* says no for a store gets no row there."""

    name: str
    run: Callable[[TrialState], None]
    description: str
    prepare: Callable[[TrialState], None] | None = None
    applies: Callable[[Store], bool] | None = None


#: The eight rows of the 2000 table, in its order, with exactly its names.
PHASES_2000: tuple[Phase, ...] = (
    Phase(
        "create users/groups",
        create_users_groups,
        "build the users and groups and attach them to the root",
    ),
    Phase("commit users/groups", commit, "commit them"),
    Phase(
        "convert processes",
        convert_processes,
        "turn the shipped catalogue into materials, labs, processes and "
        "capabilities in the process library (and its indexes)",
    ),
    Phase("commit processes", commit, "commit the catalogue and library"),
    Phase(
        "query processes",
        asking("query processes", queries.query_processes),
        "ask the library by category, lab, material, price band and for "
        "the cheapest offer of each process (brute-force walks)",
    ),
    Phase(
        "generate sequences",
        generate_sequences,
        "build process sequences of 10-20 steps ordering capabilities",
    ),
    Phase("commit sequences", commit, "commit the sequences and their steps"),
    Phase(
        "query sequences",
        asking("query sequences", queries.query_sequences),
        "list one group's sequences with their steps (brute-force walk)",
    ),
)

#: (2000 row, brute-force query, indexed query)
QUERIES: tuple[tuple[str, Query, Query], ...] = (
    ("query processes", queries.query_processes, queries.query_processes_indexed),
    ("query sequences", queries.query_sequences, queries.query_sequences_indexed),
)

CACHE_STATES: tuple[tuple[str, str], ...] = (
    ("cold", "new DB and client: object cache (and ZEO client cache) empty"),
    ("warm", "objects ghosted, storage and ZEO client cache warm"),
    ("hot", "objects in memory"),
)


def _query_rows() -> tuple[Phase, ...]:
    rows = []
    for base, brute, indexed in QUERIES:
        for form, query, how in (
            ("", brute, "brute-force walk"),
            (", indexed", indexed, "from the indexes"),
        ):
            for state, what in CACHE_STATES:
                name = f"{base}{form} ({state})"
                prepare = {"cold": cold, "warm": warm}.get(state) or hot(query)
                rows.append(Phase(name, asking(name, query), f"{how}; {what}", prepare))
    return tuple(rows)


PHASES: tuple[Phase, ...] = (
    *PHASES_2000,
    *_query_rows(),
    Phase(
        "update prices",
        update_prices,
        "reprice a tenth of the capabilities (the same ones every trial), "
        "keeping the price indexes right",
        back_to_configured_cache,
    ),
    Phase("commit update", commit, "commit the new prices"),
    Phase(
        "pack",
        pack,
        "pack to now, removing the old revisions (not on memory)",
        applies=can_pack,
    ),
)

#: Every row's name, in the order of the report's rows.
PHASE_NAMES: tuple[str, ...] = tuple(p.name for p in PHASES)

#: Query rows whose full answers the trial state keeps (the other rows keep a
#: digest only).
FULL_ANSWERS: frozenset[str] = frozenset(base for base, _, _ in QUERIES)
