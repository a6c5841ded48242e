"""The queries, checked against answers computed another way; the indexed
forms against the walks, before and after updates."""

from __future__ import annotations

import pytest

from vfab import generate, model, queries, updates
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


def test_indexed_forms_answer_alike() -> None:
    fab = generate.build(DataSpec.for_size("small"), seed=5)
    assert queries.query_processes_indexed(fab) == queries.query_processes(fab)
    for group in fab.directory.groups.keys():
        assert queries.query_sequences_indexed(fab, group) == queries.query_sequences(
            fab, group
        )


def test_indexes_follow_reprices_and_counts_use_length() -> None:
    fab = generate.build(DataSpec.for_size("small"), seed=6)
    library = fab.library
    assert len(library) == library.count() == len(library.capabilities) == 250
    ids = updates.reprice(fab, seed=6)
    assert len(ids) == 25 and ids == sorted(ids)
    assert ids == updates.reprice(generate.build(DataSpec.for_size("small"), 6), 6)
    assert queries.query_processes_indexed(fab) == queries.query_processes(fab)
    # Boundaries: a price moved exactly onto a band's edge lands in the band
    # it starts, as in the walk.
    cap = library.capabilities[ids[0]]
    library.reprice(cap, 100.0)
    assert cap.price == 100.0
    assert cap.id in queries.price_range_indexed(library, 100, 500)
    assert cap.id not in queries.price_range_indexed(library, 0, 100)
    assert queries.query_processes_indexed(fab) == queries.query_processes(fab)
    assert len(library) == 250


def test_data_sets_from_before_the_indexes_still_answer() -> None:
    """A library or fab unpickled from a database written before the indexes
    existed has none of their attributes: the indexed forms build them."""
    fab = generate.build(DataSpec.for_size("small"), seed=7)
    expected_p = queries.query_processes(fab)
    expected_s = queries.query_sequences(fab)
    for attr in ("count", "by_category", "by_lab", "by_material", "by_price"):
        del fab.library.__dict__[attr]
    del fab.library.__dict__["by_process_price"]
    del fab.__dict__["sequences_by_group"]
    assert len(fab.library) == 250  # no Length yet: counts the BTree
    assert queries.query_processes_indexed(fab) == expected_p
    assert queries.query_sequences_indexed(fab) == expected_s
    assert fab.library.count() == 250


def test_checkpoints_count_every_model_object_and_change_nothing() -> None:
    spec = DataSpec.for_size("small")
    counted = []
    fab = model.VirtualFab()
    generate.create_users_groups(fab, spec, 9, counted.append)
    cat = generate.load_catalogue()
    generate.convert_processes(fab, spec, 9, cat, counted.append)
    generate.generate_sequences(fab, spec, 9, counted.append)
    steps = sum(len(s.steps) for s in fab.sequences.values())
    params = sum(len(p.parameters) for p in fab.catalogue.processes.values())
    assert sum(counted) == (
        spec.users
        + spec.groups
        + len(fab.catalogue.labs)
        + len(fab.catalogue.materials)
        + len(fab.catalogue.processes)
        + params
        + spec.capabilities
        + spec.sequences
        + steps
    )
    plain = generate.build(spec, seed=9)
    assert queries.query_processes(fab) == queries.query_processes(plain)
    assert queries.query_sequences(fab) == queries.query_sequences(plain)


def test_the_load_tests_price_changes_keep_the_indexes_right() -> None:
    import random

    from vfab import operations

    fab = generate.build(DataSpec.for_size("small"), seed=8)
    rng = random.Random(8)
    for cid in rng.sample(range(1, 251), 60):
        operations.change_price(fab, cid, rng)
    assert queries.query_processes_indexed(fab) == queries.query_processes(fab)
