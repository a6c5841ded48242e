"""populate() writes the same data set the phases build, and says so."""

from __future__ import annotations

from pathlib import Path

import storages
from scenarios import dataset
from vfab import queries
from vfab.generate import DataSpec


def test_populate_then_find_it_again(tmp_path: Path) -> None:
    factory = storages.get("file")
    spec = DataSpec.for_size("small")
    with factory.open(tmp_path) as store:
        assert dataset.existing(store) is None
        dataset.populate(store, spec, seed=11)
    with factory.open(tmp_path) as store:
        assert dataset.existing(store) == {"scale": 1, "seed": 11, "size": "small"}
        fab = store.root()["fab"]
        assert len(fab.library) == spec.capabilities
        assert len(fab.sequences) == spec.sequences
        assert queries.query_sequences(fab)["sequences"]
