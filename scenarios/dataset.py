"""Writing a whole data set into a store, and finding one already there.

`vfab-bench serve`, `populate` and the load tests need a populated database
rather than timed phases; they all come through here, so a data set on disk
always has the same shape as the one the phases build.
"""

from __future__ import annotations

from typing import Any

from scenarios.phases import FAB_KEY
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


def populate(store: Store, spec: DataSpec, seed: int) -> VirtualFab:
    """Build the data set of *spec* and *seed* in *store*, committing after
    each builder, and return its root object.  The caller decides whether
    an existing data set may be replaced (see existing())."""
    root = store.root()
    fab = VirtualFab()
    root[FAB_KEY] = fab
    root[SPEC_KEY] = {"scale": spec.scale, "seed": seed, "size": spec.name}
    generate.create_users_groups(fab, spec, seed)
    store.commit()
    generate.convert_processes(fab, spec, seed, generate.load_catalogue())
    store.commit()
    generate.generate_sequences(fab, spec, seed)
    store.commit()
    return fab
