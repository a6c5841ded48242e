"""scenarios.checker.consistency: the check finds every kind of violation when
one is injected, and none on real storages under the same load.

Two levels: hand-made histories against an in-memory data set (each kind
of violation, exactly), and storages that break one promise each (built on
ZODB's MappingStorage, the way a broken storage would) under the real
sessions of concurrent users in threads, beside FileStorage and this
project's BDB storage under the same load.  ZEO and RelStorage are checked
by tests/scale/test_scale.py (whole runs) and
tests/verify/test_scenarios.py.
"""

from __future__ import annotations

import dataclasses
import random
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import transaction
import ZODB
from persistent.mapping import PersistentMapping
from ZODB.MappingStorage import MappingStorage
from ZODB.utils import get_pickle_metadata

from scenarios.checker import consistency
from scenarios.data import FAB_KEY
from scenarios.load.history import Event, History, settle
from scenarios.load.mix import LoadConfig, Operation
from scenarios.load.session import Session
from storages import ROOT_KEY
from vfab import generate, operations
from vfab.generate import DataSpec
from vfab.model import VirtualFab, cents, price_key

# -- hand-made histories ------------------------------------------------------


@pytest.fixture
def fab() -> VirtualFab:
    return generate.build(DataSpec.for_size("small"))


def event(
    n: int, receipt: Any, outcome: str = "ok", tid: str = "", client: str = "c0"
) -> Event:
    from scenarios.load.history import accesses

    reads, writes = accesses(receipt)
    op = type(receipt).__name__
    error = None if outcome == "ok" else "ConflictError"
    return Event(client, n, op, outcome, error, tid or None, reads, writes)


def kinds(report: consistency.ConsistencyReport) -> dict[str, int]:
    return {k: n for k, n in report.counts().items() if n}


def test_a_clean_history_has_no_violation(fab: VirtualFab) -> None:
    rng = random.Random(1)
    baseline = consistency.Baseline.read(fab)
    owner = fab.directory.users[fab.directory.users.minKey()]
    receipts = [operations.create_sequence(fab, owner, rng) for _ in range(5)]
    receipts += [operations.change_price(fab, 1 + i % 3, rng) for i in range(6)]
    receipts += [operations.transfer_wafers(fab, rng) for _ in range(6)]
    receipts += [operations.audit_stock(fab)]
    receipts += [operations.looked(operations.lookup_capability(fab, 2))]
    report = consistency.check(
        fab, baseline, [event(i, r) for i, r in enumerate(receipts)]
    )
    assert report.ok, report.lines()
    assert report.summary() == "consistency: 0 violations"
    tally = report.checked
    assert tally["attempts"] == len(receipts) and tally["ok"] == len(receipts)
    assert tally["prices"] == 250 and tally["sequences"] == 5
    assert tally["audits"] == 1 and tally["index_entries"] > 1000
    assert "checked 19 attempts (19 ok, 0 conflicts retried, 0 failed, 0 unknown)" in (
        report.what()
    )


def test_lost_writes(fab: VirtualFab) -> None:
    rng = random.Random(2)
    baseline = consistency.Baseline.read(fab)
    owner = fab.directory.users[fab.directory.users.minKey()]
    created = operations.create_sequence(fab, owner, rng)
    del fab.sequences[created.sequence_id]
    fab.index_sequences()
    cap = fab.library.capabilities[3]
    old = cap.price_revision, cap.price
    repriced = operations.change_price(fab, 3, rng)
    fab.library.reprice(cap, old[1])  # the write undone, indexes kept right
    cap.price_revision = old[0]
    report = consistency.check(fab, baseline, [event(1, created), event(2, repriced)])
    assert kinds(report) == {"lost write": 2}, report.lines()
    text = "\n".join(report.lines())
    assert f"sequence {created.sequence_id} created by c0#1" in text
    assert "capability 3's price revision 1" in text and "revision 0 is stored" in text


def test_phantom_writes_name_the_failed_attempt_and_the_transaction(
    fab: VirtualFab,
) -> None:
    rng = random.Random(3)
    baseline = consistency.Baseline.read(fab)
    owner = fab.directory.users[fab.directory.users.minKey()]
    failed = operations.create_sequence(fab, owner, rng)
    nobody = operations.create_sequence(fab, owner, rng)
    price = operations.change_price(fab, 4, rng)
    events = [event(1, failed, "failed"), event(2, price, "failed")]
    report = consistency.check(fab, baseline, events)
    assert kinds(report) == {"phantom write": 3}, report.lines()
    text = "\n".join(report.lines())
    assert f"sequence {failed.sequence_id} is the write of c0#1" in text
    assert "whose commit failed (ConflictError)" in text
    assert f"sequence {nobody.sequence_id} was created by no operation" in text
    assert "capability 4's price revision 1" in text
    assert all(v.tids for v in report.violations)


def test_an_unknown_outcome_may_or_may_not_appear(fab: VirtualFab) -> None:
    rng = random.Random(4)
    baseline = consistency.Baseline.read(fab)
    owner = fab.directory.users[fab.directory.users.minKey()]
    there = operations.create_sequence(fab, owner, rng)
    gone = operations.Created(operations.FIRST_ORDER_ID + 7, owner.login, "g", 3)
    events = [event(1, there, "unknown"), event(2, gone, "unknown")]
    assert consistency.check(fab, baseline, events).ok


def test_index_drift_both_ways(fab: VirtualFab) -> None:
    baseline = consistency.Baseline.read(fab)
    library = fab.library
    cap = library.capabilities[9]
    library.by_price.remove(price_key(cents(cap.price), cap.id))
    library.by_price.add(price_key(1, 9999))
    library.by_lab[cap.lab.name].remove(cap.id)
    group = fab.sequences[1].group.name
    fab.sequences_by_group[group].remove(1)
    report = consistency.check(fab, baseline, [])
    assert kinds(report) == {"index drift": 3}, report.lines()
    text = "\n".join(report.lines())
    assert "library.by_price: 1 missing (capability 9 at $" in text
    assert "1 extra (capability 9999 at $0.01)" in text
    assert f"library.by_lab[{cap.lab.name!r}]: 1 missing (capability 9)" in text
    assert f"sequences_by_group[{group!r}]: 1 missing (sequence 1)" in text


def test_lost_updates(fab: VirtualFab) -> None:
    rng = random.Random(5)
    baseline = consistency.Baseline.read(fab)
    first = operations.change_price(fab, 6, rng)
    twin = dataclasses.replace(first, cents=first.cents + 1)
    twin_event = event(2, twin, client="c1")
    report = consistency.check(fab, baseline, [event(1, first), twin_event])
    assert kinds(report) == {"lost update": 1}, report.lines()
    assert (
        "c0#1 (Repriced) and c1#2 (Repriced) both made price revision 1 of 6"
        in (report.lines()[0])
    )
    # Each read the revision the other wrote over: a write skew on one
    # register, which snapshot isolation allows as a cycle; the lost update
    # is what first-committer-wins forbids.
    assert report.allowed == {"G2-item": 1}


def test_inconsistent_reads(fab: VirtualFab) -> None:
    rng = random.Random(6)
    baseline = consistency.Baseline.read(fab)
    audit = operations.audit_stock(fab)
    mixed = dataclasses.replace(audit, total=audit.total - 7)
    failed = operations.change_price(fab, 8, rng)
    dirty = operations.Looked(8, failed.revision, failed.cents)
    fab.library.reprice(fab.library.capabilities[8], failed.read_cents / 100)
    fab.library.capabilities[8].price_revision = 0
    events = [event(1, mixed), event(2, failed, "failed"), event(3, dirty)]
    report = consistency.check(fab, baseline, events)
    assert kinds(report) == {"inconsistent read": 2}, report.lines()
    text = "\n".join(report.lines())
    assert "summed to" in text and "transfers never change the sum" in text
    assert "the write of c0#2 (Repriced), whose commit failed" in text


def test_a_pending_attempt_without_outcome_is_unknown() -> None:
    pending = Event("c1", 4, "create_sequence", "pending", None, None, (), ())
    (settled,) = settle([pending])
    assert settled.outcome == "unknown"
    done = dataclasses.replace(pending, outcome="failed", error="ConflictError")
    assert settle([pending, done]) == [done]


def test_the_report_lists_the_first_few_and_counts_all(fab: VirtualFab) -> None:
    baseline = consistency.Baseline.read(fab)
    owner = fab.directory.users[fab.directory.users.minKey()]
    rng = random.Random(7)
    for _ in range(8):
        operations.create_sequence(fab, owner, rng)
    report = consistency.check(fab, baseline, [])
    assert report.summary() == "consistency: 8 violations (8 phantom write)"
    assert len(report.lines()) == 6 and "3 more" in report.lines()[-1]
    assert len(report.to_json()["violations"]) == 8


# -- storages that break a promise, under concurrent users ---------------------


def _class_of(data: bytes) -> str:
    return get_pickle_metadata(data)[1]


class KeepsFailedWrites(MappingStorage):
    """RelStorage 4.3.0's SQLite bug, reduced: what an aborted transaction
    stored is written by the next commit."""

    def tpc_abort(self, txn: Any) -> None:
        if txn is self._transaction:
            self._left = dict(getattr(self, "_tdata", {}))
        super().tpc_abort(txn)

    def tpc_finish(self, txn: Any, func: Any = lambda tid: None) -> Any:
        for oid, data in self.__dict__.pop("_left", {}).items():
            self._tdata.setdefault(oid, data)
        return super().tpc_finish(txn, func)


class DropsAWrite(MappingStorage):
    """Acknowledges a commit but drops the store of one *kind* of record
    (the Nth change of an existing record of that kind once *armed*: by
    load(), for its finale of sequential price changes, so that the drop
    does not depend on what the threads happened to do): a lost write, or
    a stale index."""

    armed = False

    def __init__(self, kinds: tuple[str, ...], nth: int) -> None:
        super().__init__()
        self.kinds, self.nth, self.seen = kinds, nth, 0

    def store(self, oid: bytes, serial: bytes, data: bytes, v: str, txn: Any) -> None:
        if self.armed and oid in self._data and _class_of(data) in self.kinds:
            self.seen += 1
            if self.seen == self.nth:
                return
        super().store(oid, serial, data, v, txn)


class ServesOldLabs(MappingStorage):
    """Every other read of a lab returns the revision before the one the
    snapshot should see."""

    flip = False

    def loadBefore(self, oid: bytes, tid: bytes) -> Any:
        found = super().loadBefore(oid, tid)
        if found and _class_of(found[0]) == "Lab":
            self.flip = not self.flip
            if self.flip:
                older = super().loadBefore(oid, found[1])
                if older:
                    return older
        return found


#: Writes and audits only, so a short load exercises what the check sees:
#: verify's pairs too (a write skew readCurrent must stop, two registers
#: written together and their reader).
WRITES = {
    "browse": 0,
    "lookup": 2,
    "list_sequences": 0,
    "read_sequence": 1,
    "create_sequence": 2,
    "change_price": 2,
    "transfer_wafers": 2,
    "audit_stock": 2,
    "match_price": 2,
    "reprice_pair": 1,
    "compare_offers": 2,
}


def reprice_against_a_rival(first: Session, rival: Session) -> None:
    """*first* reprices capability 1 while *rival* commits a new revision
    of it (same price) between first's read and its commit: first's commit
    stores the price indexes' buckets, then fails with a conflict on the
    capability; then first commits an unrelated transfer.  Under
    concurrent threads this happens by chance; here it happens every
    time."""
    from scenarios.load.mix import BY_NAME, Operation

    def reprice(s: Any) -> Any:
        return operations.change_price(s.fab, 1, s.rng)

    def revise(s: Any) -> Any:
        cap = s.fab.library.capabilities[1]
        read = cap.price_revision
        cap.price_revision += 1
        price = cents(cap.price)
        return operations.Repriced(1, cap.price_revision, price, read, price)

    pending = [rival]

    def reprice_under_a_rival(s: Any) -> Any:
        receipt = reprice(s)
        while pending:
            pending.pop().run(Operation("change_price", 1, True, revise, ""))
        return receipt

    retries = first.config.retries
    first.config = dataclasses.replace(first.config, retries=0)
    outcome = first.run(Operation("change_price", 1, True, reprice_under_a_rival, ""))
    assert type(outcome.error).__name__ == "ConflictError", outcome
    first.config = dataclasses.replace(first.config, retries=retries)
    first.run(BY_NAME["transfer_wafers"])


def load(
    storage: Any, users: int = 4, ops: int = 60, rival: bool = False
) -> consistency.ConsistencyReport:
    """Populate *storage*, run *users* sessions in threads (*ops* operations
    each; before them, with *rival*, reprice_against_a_rival; after them six
    price changes in a row), then check the data through a fresh
    connection."""
    db = ZODB.DB(storage, pool_size=users + 2)
    try:
        tm = transaction.TransactionManager()
        conn = db.open(tm)
        container = conn.root()[ROOT_KEY] = PersistentMapping()
        container[FAB_KEY] = generate.build(DataSpec.for_size("small"))
        tm.commit()
        baseline = consistency.Baseline.read(container[FAB_KEY])
        conn.close()
        config = LoadConfig.from_values("127.0.0.1:1", weights=WRITES, retries=20)
        history = History()
        sessions = [
            Session(db, config, history, random.Random(i), client=f"t{i}")
            for i in range(users)
        ]

        def work(session: Session) -> None:
            for _ in range(ops):
                try:
                    session.run(session.pick())
                except Exception:  # counted in the history as failed
                    pass

        if rival:  # first: a storage it breaks may fail the load's operations
            reprice_against_a_rival(sessions[0], sessions[1])
        threads = [threading.Thread(target=work, args=(s,)) for s in sessions]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        # The finale: six price changes one after another (a storage that
        # drops a write is armed for them).
        storage.armed = True
        for cid in range(1, 7):
            op = Operation(
                "change_price",
                1,
                True,
                lambda s, cid=cid: operations.change_price(s.fab, cid, s.rng),
                "",
            )
            try:
                sessions[0].run(op)
            except Exception:  # a broken storage's index: failed, in the history
                pass
        for s in sessions:
            s.close()
        tm = transaction.TransactionManager()
        conn = db.open(tm)
        conn.cacheMinimize()
        fab = conn.root()[ROOT_KEY][FAB_KEY]
        report = consistency.check(fab, baseline, history)
        tm.abort()
        conn.close()
        assert report.checked["ok"] > users * ops // 2, report.checked
        return report
    finally:
        db.close()


def test_a_storage_that_keeps_failed_writes_is_caught() -> None:
    report = load(KeepsFailedWrites(), rival=True)
    # The failed reprice stored the price indexes' buckets before its
    # conflict on the capability: the next commit writes them.
    assert report.counts()["index drift"] > 0, report.lines()
    assert not report.ok


def test_a_storage_that_drops_an_acknowledged_write_is_caught() -> None:
    report = load(DropsAWrite(("ProcessCapability",), nth=3))
    assert report.counts()["lost write"] > 0, report.lines()


def test_a_storage_that_leaves_an_index_stale_is_caught() -> None:
    report = load(DropsAWrite(("LLTreeSet", "LLTreeSetBucket"), nth=4))
    assert report.counts()["index drift"] > 0, report.lines()


def test_a_storage_that_serves_an_old_snapshot_is_caught() -> None:
    report = load(ServesOldLabs())
    assert report.counts()["inconsistent read"] > 0, report.lines()


@pytest.fixture
def scratch(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path


def test_mapping_storage_under_the_same_load_has_no_violation() -> None:
    report = load(MappingStorage(), rival=True)
    assert report.ok, report.lines()
    # one process: every commit visible when it returns, readCurrent kept
    assert report.level == "strict serializable", report.what()


def test_filestorage_under_the_same_load_has_no_violation(scratch: Path) -> None:
    from ZODB.FileStorage import FileStorage

    report = load(FileStorage(str(scratch / "Data.fs")), rival=True)
    assert report.ok, report.lines()


def test_the_bdb_storage_under_the_same_load_has_no_violation(scratch: Path) -> None:
    from tests.conftest import factory_or_skip

    factory_or_skip("bdb")
    from storages.bdb.storage import BDBStorage

    report = load(BDBStorage(scratch / "env"), rival=True)
    assert report.ok, report.lines()
