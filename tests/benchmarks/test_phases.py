"""One benchmark per phase of scenarios.bench.phases.PHASES, generated from the
table, so rows added there are benchmarked with no change here.

Each test times one phase (the benchmark fixture times one target per
test).  Every round starts from a fresh state, built outside the clock:

1. a fresh database: the store's root container replaced by an empty one
   (Store.reset), the database packed so that nothing of earlier rounds
   remains, reopened so that the object cache and any ZEO client cache
   start empty, and reset again as run_trial resets a new store -- what a
   new trial of `vfab-bench run` gets, without starting a server per round
   (measured: medians within noise of the runner's on file and zeo);
2. the phases before this one, each after its prepare, run in order on a
   TrialState as the runner runs them (so a commit phase commits exactly
   what the runner's would, and a query phase finds the objects the
   runner's finds, cache included), then this phase's own prepare (the
   cold, warm and hot rows empty or fill caches there).

A phase whose applies() says no for a storage (pack on memory) is skipped.

Group = the phase name; extra_info holds cpu_s (client CPU), loads and
stores (Connection.getTransferCounts; None on memory), storage and size.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from scenarios.bench import phases
from scenarios.bench.phases import PHASE_NAMES, PHASES, TrialState
from storages import Store
from tests.benchmarks.support import measure
from vfab.generate import DEFAULT_SEED, DataSpec, load_catalogue


def phase_id(name: str) -> str:
    """'create users/groups' -> 'create-users-groups' (test ids stay
    selectable with -k and free of path separators)."""
    return re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-")


def fresh_database(store: Store) -> None:
    """A database holding nothing but an empty root container, opened anew
    (empty caches) and then reset as run_trial resets a new store."""
    store.abort()
    store.reset()
    db: Any = getattr(store, "db", None)
    # Drop what earlier rounds left unreachable; never on a user's database
    # (--storage-uri, --storage-config: can_pack is False without --pack).
    if db is not None and store.can_pack and hasattr(db.storage, "pack"):
        db.pack()
    store.reopen()
    # As run_trial does right after opening.  On ZEO this commit is also a
    # round trip that lets the new client settle: timing the first phase
    # straight after reopen() measured 3 ms instead of 0.4 ms.
    store.reset()


@pytest.mark.parametrize("phase", PHASE_NAMES, ids=phase_id)
def test_phase(
    benchmark: Any,
    request: pytest.FixtureRequest,
    storage: str,
    size: str,
    spec: DataSpec,
    store: Store,
    phase: str,
) -> None:
    """Times phase.run(state) on a state holding what the phases before it
    built, in a freshly packed and reopened database."""
    index = PHASE_NAMES.index(phase)
    timed, before = PHASES[index], PHASES[:index]
    if timed.applies is not None and not timed.applies(store):
        pytest.skip(f"{phase} does not apply to {storage}")
    catalogue = load_catalogue()
    states: list[TrialState] = []

    def setup() -> TrialState:
        fresh_database(store)
        state = TrialState(store, spec, DEFAULT_SEED, catalogue)
        for earlier in before:
            if earlier.applies is not None and not earlier.applies(store):
                continue
            if earlier.prepare is not None:
                earlier.prepare(state)
            earlier.run(state)
        if timed.prepare is not None:
            timed.prepare(state)
        states[:] = [state]
        return state

    benchmark.group = phase
    meter = measure(
        benchmark, request.config, store, timed.run, setup, storage=storage, size=size
    )
    # Correctness, also when benchmarks are disabled (one round).
    if timed.run is phases.commit and meter.stores:
        assert min(meter.stores) > 0, f"{phase} stored nothing"
    if phase in states[-1].answers:
        assert states[-1].answers[phase], f"{phase} found nothing"
