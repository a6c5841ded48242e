"""Writing a whole data set into a store, and finding one already there.

`vfab-bench serve`, `populate` and the load tests need a populated database
rather than timed phases; they all come through here, so a data set on disk
always has the same shape as the one the phases build.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scenarios.data import FAB_KEY
from scenarios.data.batching import Batcher
from scenarios.progress import Progress
from storages import Store
from vfab import generate
from vfab.generate import DataSpec
from vfab.model import VirtualFab

#: From this scale up (large), populating says in plain lines which builder
#: runs (a bar on a terminal shows it at any size).
LINES_FROM_SCALE = generate.SIZES["large"]

#: Root keys describing the data set beside the fab itself.
SPEC_KEY = "spec"


def existing(store: Store) -> dict[str, Any] | None:
    """The description of the data set *store* holds ({"scale", "seed"}),
    or None when it holds none."""
    root = store.root()
    if FAB_KEY not in root:
        return None
    return dict(root.get(SPEC_KEY, {}))


def populate(
    store: Store,
    spec: DataSpec,
    seed: int,
    batch: int = 0,
    progress: Progress | None = None,
) -> VirtualFab:
    """Build the data set of *spec* and *seed* in *store*, committing after
    each builder and, with *batch* > 0, after every *batch* objects (bounded
    memory for the large sizes), and return its root object.  The caller
    decides whether an existing data set may be replaced (see existing()).
    *progress* hears each builder as a step and the objects it built
    (planned: expected_objects)."""
    root = store.root()
    fab = VirtualFab()
    root[FAB_KEY] = fab
    root[SPEC_KEY] = {"scale": spec.scale, "seed": seed, "size": spec.name}
    batcher = Batcher(store, batch)
    checkpoint: Any = batcher if progress is None else _Counted(batcher, progress)
    catalogue = generate.load_catalogue()
    if progress is not None:
        progress.plan(expected_objects(spec, catalogue))
    steps: tuple[tuple[str, Callable[[], object]], ...] = (
        (
            "users and groups",
            lambda: generate.create_users_groups(fab, spec, seed, checkpoint),
        ),
        (
            "processes",
            lambda: generate.convert_processes(fab, spec, seed, catalogue, checkpoint),
        ),
        (
            "sequences",
            lambda: generate.generate_sequences(fab, spec, seed, checkpoint),
        ),
    )
    for label, build in steps:
        if progress is not None:
            progress.step(label, weight=0)
            if spec.scale >= LINES_FROM_SCALE:
                progress.line(f"populating: {label}", counted=True)
        build()
        if progress is not None:
            checkpoint.flush()
            progress.status("commit")
        store.commit()
    if progress is not None:
        progress.advance()
    return fab


def expected_objects(spec: DataSpec, catalogue: generate.ShippedCatalogue) -> int:
    """Persistent objects a data set of *spec* holds on average (each
    sequence the mean number of steps)."""
    extra_steps = spec.sequences * (spec.steps_max - spec.steps_min) // 2
    return spec.min_objects(catalogue) + extra_steps


class _Counted:
    """The generator's checkpoint: the Batcher, and the objects told to the
    progress every COUNT_EVERY of them (not on every object: a million
    calls would cost a second)."""

    COUNT_EVERY = 5_000

    def __init__(self, batcher: Batcher, progress: Progress) -> None:
        self.batcher = batcher
        self.progress = progress
        self.pending = 0

    def __call__(self, objects: int) -> None:
        self.batcher(objects)
        self.pending += objects
        if self.pending >= self.COUNT_EVERY:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            self.progress.count(self.pending)
            self.pending = 0
