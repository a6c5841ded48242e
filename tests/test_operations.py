"""The domain operations and the invariants check, on an in-memory data set."""

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


def test_created_sequences_and_repricings_pass_the_check(fab: VirtualFab) -> None:
    rng = random.Random(2)
    owner = fab.directory.users.minKey()
    created = [
        operations.create_sequence(fab, fab.directory.users[owner], rng)
        for _ in range(20)
    ]
    repriced = [operations.change_price(fab, 1 + i % 3, rng) for i in range(9)]
    assert all(c.sequence_id >= operations.FIRST_ORDER_ID for c in created)
    assert [r.revision for r in repriced if r.capability_id == 1] == [1, 2, 3]
    report = operations.check(fab, created, repriced)
    assert report.ok, report.problems
    assert (report.sequences_checked, report.repricings_checked) == (20, 9)
    assert report.capabilities_checked == 250
    assert "invariants hold" in report.summary()


def test_the_check_finds_what_was_lost_or_broken(fab: VirtualFab) -> None:
    rng = random.Random(3)
    owner = fab.directory.users[fab.directory.users.minKey()]
    kept = operations.create_sequence(fab, owner, rng)
    lost = operations.create_sequence(fab, owner, rng)
    del fab.sequences[lost.sequence_id]
    short = operations.create_sequence(fab, owner, rng)
    fab.sequences[short.sequence_id].steps.pop()
    first = operations.change_price(fab, 5, rng)
    fab.library.capabilities[6].price = 10**9
    report = operations.check(
        fab,
        [kept, lost, short],
        [first, operations.Repriced(5, first.revision), operations.Repriced(8, 4)],
    )
    text = "\n".join(report.problems)
    assert not report.ok
    assert f"sequence {lost.sequence_id} reported created is not stored" in text
    assert f"sequence {short.sequence_id}: stored owner/group/steps" in text
    assert "capability 5: two price changes both made revision 1" in text
    assert "capability 6: price 1000000000" in text
    assert "capability 8: revision 4 reported, 0 stored" in text
    assert "violated (5 problems)" in report.summary()


def test_problems_are_capped(fab: VirtualFab) -> None:
    missing = [operations.Created(i, "u", "g", 1) for i in range(1, 50)]
    for sid in range(1, 50):
        fab.sequences.pop(sid, None)
    report = operations.check(fab, missing, max_problems=5)
    assert len(report.problems) == 6 and report.problems[-1].startswith("...")
    assert report.found == 49 and "(49 problems)" in report.summary()
