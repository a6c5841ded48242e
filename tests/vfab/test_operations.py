"""The domain operations, on an in-memory data set (their check:
tests/load/test_consistency.py)."""

from __future__ import annotations

import random

import pytest

from vfab import generate, operations
from vfab.generate import DataSpec
from vfab.model import VirtualFab


@pytest.fixture
def fab() -> VirtualFab:
    return generate.build(DataSpec.for_size("small"))


def test_reads_answer_with_plain_values(fab: VirtualFab) -> None:
    rng = random.Random(1)
    questions = {operations.browse(fab, rng)[0].split("=")[0] for _ in range(50)}
    assert questions == {"category", "lab", "material", "price", "cheapest"}
    page = operations.lookup_capability(fab, 7)
    assert page["id"] == 7 and page["price"] > 0
    group = fab.directory.groups.minKey()
    listing = operations.list_group_sequences(fab, group)
    assert listing
    assert all(fab.sequences[sid].group.name == group for sid, _, _ in listing)
    sid = operations.some_sequence_id(fab, rng)
    whole = operations.read_sequence(fab, sid)
    assert whole["id"] == sid and 10 <= len(whole["steps"]) <= 20


def test_writes_keep_every_index_and_the_stock_total(fab: VirtualFab) -> None:
    from scenarios.checker import consistency

    rng = random.Random(2)
    owner = fab.directory.users[fab.directory.users.minKey()]
    before = operations.audit_stock(fab).total
    created = [operations.create_sequence(fab, owner, rng) for _ in range(20)]
    repriced = [operations.change_price(fab, 1 + i % 3, rng) for i in range(9)]
    moved = [operations.transfer_wafers(fab, rng) for _ in range(20)]
    assert all(c.sequence_id >= operations.FIRST_ORDER_ID for c in created)
    assert [r.revision for r in repriced if r.capability_id == 1] == [1, 2, 3]
    assert operations.audit_stock(fab).total == before
    assert all(t.labs[0][4] == t.labs[0][2] - t.wafers for t in moved)
    empty = consistency.Baseline(registers={}, sequences=frozenset())
    report = consistency.check(fab, empty, [])
    assert report.counts()["index drift"] == 0, report.lines()
