"""Writing a whole data set into a store, and finding one already there.

`vfab-bench serve`, `populate` and the load tests need a populated database
rather than timed phases; they all come through here, so a data set on disk
always has the same shape as the one the phases build.
"""

from __future__ import annotations

from typing import Any

from scenarios.bench.batching import Batcher
from scenarios.bench.phases import FAB_KEY
from storages import Store
from vfab import generate
from vfab.generate import DataSpec
from vfab.model import VirtualFab

#: Root keys describing the data set beside the fab itself.
SPEC_KEY = "spec"


def existing(store: Store) -> dict[str, Any] | None:
    """The description of the data set *store* holds ({"scale", "seed"}),
    or None when it holds none."""
    root = store.root()
    if FAB_KEY not in root:
        return None
    return dict(root.get(SPEC_KEY, {}))


def populate(store: Store, spec: DataSpec, seed: int, batch: int = 0) -> VirtualFab:
    """Build the data set of *spec* and *seed* in *store*, committing after
    each builder and, with *batch* > 0, after every *batch* objects (bounded
    memory for the large sizes), and return its root object.  The caller
    decides whether an existing data set may be replaced (see existing())."""
    root = store.root()
    fab = VirtualFab()
    root[FAB_KEY] = fab
    root[SPEC_KEY] = {"scale": spec.scale, "seed": seed, "size": spec.name}
    checkpoint = Batcher(store, batch)
    generate.create_users_groups(fab, spec, seed, checkpoint)
    store.commit()
    catalogue = generate.load_catalogue()
    generate.convert_processes(fab, spec, seed, catalogue, checkpoint)
    store.commit()
    generate.generate_sequences(fab, spec, seed, checkpoint)
    store.commit()
    return fab
