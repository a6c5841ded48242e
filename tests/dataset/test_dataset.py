"""populate() writes the same data set the phases build, and says so."""

from __future__ import annotations

from pathlib import Path

import storages
from scenarios.data import dataset
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


def test_populate_in_batches_commits_as_it_goes(tmp_path: Path) -> None:
    """Batches change the transactions, not the data."""
    spec = DataSpec.for_size("small")
    answers = []
    transactions = []
    for batch, sub in ((0, "whole"), (100, "batched")):
        (tmp_path / sub).mkdir()
        with storages.get("file").open(tmp_path / sub) as store:
            dataset.populate(store, spec, seed=3, batch=batch)
            fab = store.root()["fab"]
            answers.append(
                (queries.query_processes(fab), queries.query_sequences_indexed(fab))
            )
            transactions.append(sum(1 for _ in store.db.storage.iterator()))  # type: ignore[attr-defined]
    assert answers[0] == answers[1]
    assert transactions[1] >= transactions[0] + 9  # 1000+ objects / 100
