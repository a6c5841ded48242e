"""The brute-force queries, checked against answers computed another way."""

from __future__ import annotations

import pytest

from vfab import generate, queries
from vfab.generate import DataSpec


@pytest.fixture(scope="module")
def fab():  # type: ignore[no-untyped-def]
    return generate.build(DataSpec.for_size("small"))


def test_query_processes_partitions_the_library(fab) -> None:  # type: ignore[no-untyped-def]
    answers = queries.query_processes(fab)
    by_category = [ids for k, ids in answers.items() if k.startswith("category=")]
    everything = sorted(i for ids in by_category for i in ids)
    assert everything == list(fab.library.capabilities.keys())
    assert len(answers["cheapest"]) == len(
        {c.process.name for c in fab.library.capabilities.values()}
    )
    for name, cid in answers["cheapest"].items():
        cap = fab.library.capabilities[cid]
        assert cap.process.name == name
        assert all(
            c.price >= cap.price
            for c in fab.library.capabilities.values()
            if c.process.name == name
        )


def test_price_bands(fab) -> None:  # type: ignore[no-untyped-def]
    ids = queries.capabilities_in_price_range(fab, 100, 500)
    assert ids and all(100 <= fab.library.capabilities[i].price < 500 for i in ids)


def test_query_sequences_lists_one_group(fab) -> None:  # type: ignore[no-untyped-def]
    answer = queries.query_sequences(fab)
    group = answer["group"]
    expected = [s.id for s in fab.sequences.values() if s.group.name == group]
    assert [row[0] for row in answer["sequences"]] == expected
    for sid, _, _, steps in answer["sequences"]:
        assert len(steps) == len(fab.sequences[sid].steps)
