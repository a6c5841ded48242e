"""The eight phases of the 2000 table, in its order.

A phase is a plain function of the trial's state; the runner times it.
Anything a phase needs that is not what it measures (parsing the shipped
catalogue, opening the database) happens before the clock starts.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from storages import Store
from vfab import generate, queries
from vfab.generate import Catalogue, DataSpec
from vfab.model import VirtualFab

#: The root key under which a data set's VirtualFab lives.
FAB_KEY = "fab"


@dataclasses.dataclass
class TrialState:
    """What one trial's phases share: the store, the spec, and the answers
    the query phases found (kept so tests and checks can compare them)."""

    store: Store
    spec: DataSpec
    seed: int
    catalogue: Catalogue
    answers: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def fab(self) -> VirtualFab:
        return self.store.root()[FAB_KEY]  # type: ignore[no-any-return]


def create_users_groups(state: TrialState) -> None:
    fab = VirtualFab()
    state.store.root()[FAB_KEY] = fab
    generate.create_users_groups(fab, state.spec, state.seed)


def convert_processes(state: TrialState) -> None:
    generate.convert_processes(state.fab, state.spec, state.seed, state.catalogue)


def query_processes(state: TrialState) -> None:
    state.answers["query processes"] = queries.query_processes(state.fab)


def generate_sequences(state: TrialState) -> None:
    generate.generate_sequences(state.fab, state.spec, state.seed)


def query_sequences(state: TrialState) -> None:
    state.answers["query sequences"] = queries.query_sequences(state.fab)


def commit(state: TrialState) -> None:
    state.store.commit()


@dataclasses.dataclass(frozen=True)
class Phase:
    name: str
    run: Callable[[TrialState], None]
    description: str


#: name -> phase, in the order of the report's rows (the 2000 order).
PHASES: tuple[Phase, ...] = (
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
        "capabilities in the process library",
    ),
    Phase("commit processes", commit, "commit the catalogue and library"),
    Phase(
        "query processes",
        query_processes,
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
        query_sequences,
        "list one group's sequences with their steps (brute-force walk)",
    ),
)

PHASE_NAMES: tuple[str, ...] = tuple(p.name for p in PHASES)
