"""What one user of the exchange does to a data set, one operation at a time,
and the rules the data must still obey after many users did it at once.

These are the units of concurrent load (scenarios.load.session times them, in a
transaction each): browse the library, look up a capability, order a new
sequence of steps, change a capability's price, list a group's sequences,
read one whole sequence, move wafer stock between two labs, and audit the
stock.  Each takes the VirtualFab and a random.Random and returns plain
values; none commits, none knows about storages.

Writes and the reads a checker can use return a receipt: what the operation
read and wrote (ids, revisions, values).  The caller records it with the
transaction's outcome (scenarios.load.history), and the consistency checker
(scenarios.checker.consistency) compares those records with what is stored.
"""

from __future__ import annotations

import dataclasses
import functools
import random
from typing import Any

from vfab import digests, generate, queries
from vfab.model import (
    Lab,
    ProcessCapability,
    ProcessSequence,
    ProcessStep,
    User,
    VirtualFab,
    cents,
)

#: Ids of sequences made by operations start here, far above the generator's
#: (1..30 per scale unit), and stay below IOBTree's 32-bit key limit.
FIRST_ORDER_ID = 1 << 24
LAST_ORDER_ID = (1 << 31) - 1


@dataclasses.dataclass(frozen=True)
class Created:
    """Receipt of create_sequence: the sequence the transaction adds, and
    the digest of all of it (vfab.digests.sequence: its steps included)."""

    sequence_id: int
    owner: str  # login
    group: str
    steps: int
    digest: str = ""


@dataclasses.dataclass(frozen=True)
class Repriced:
    """Receipt of change_price: the capability's revision and price (in
    cents) this change read, and the ones it wrote, with the digests of the
    whole capability as read and as written."""

    capability_id: int
    revision: int
    cents: int
    read_revision: int
    read_cents: int
    digest: str = ""
    read_digest: str = ""


@dataclasses.dataclass(frozen=True)
class Looked:
    """Receipt of lookup_capability: the revision and price (cents) read,
    and the digest of the whole capability read."""

    capability_id: int
    revision: int
    cents: int
    digest: str = ""


@dataclasses.dataclass(frozen=True)
class Transferred:
    """Receipt of transfer_wafers: per lab (source first), the stock
    revision, stock and digest read, and the ones written."""

    wafers: int
    #: ((lab, read revision, read stock, new revision, new stock), ...)
    labs: tuple[tuple[str, int, int, int, int], ...]
    #: ((read digest, new digest), ...), in the order of *labs*
    digests: tuple[tuple[str, str], ...] = ()


@dataclasses.dataclass(frozen=True)
class Audited:
    """Receipt of audit_stock: every lab's (name, stock revision, stock) as
    one snapshot saw them, their sum, and each lab's digest."""

    total: int
    labs: tuple[tuple[str, int, int], ...]
    digests: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Matched:
    """Receipt of match_price: the change of one capability's price
    (*change*) and what it read, with readCurrent, of its rival
    (*rival*)."""

    change: Repriced
    rival: Looked


@dataclasses.dataclass(frozen=True)
class RepricedPair:
    """Receipt of reprice_pair: two price changes in one transaction."""

    first: Repriced
    second: Repriced


@dataclasses.dataclass(frozen=True)
class Compared:
    """Receipt of compare_offers: two capabilities read in one snapshot."""

    first: Looked
    second: Looked


@dataclasses.dataclass(frozen=True)
class SequenceRead:
    """Receipt of read_sequence: the sequence read and its digest."""

    sequence_id: int
    steps: int
    digest: str


# -- reads ------------------------------------------------------------------

#: The kinds of question browse() asks, one per call.
BROWSE_QUESTIONS = ("category", "lab", "material", "price band", "cheapest")


def browse(fab: VirtualFab, rng: random.Random) -> tuple[str, Any]:
    """One page of the library: a question of the "query processes" mix
    (by category, lab, material, price band, or the cheapest offers), drawn
    at random, answered by a walk of the library.  Returns (question,
    answer)."""
    kind = rng.choice(BROWSE_QUESTIONS)
    catalogue = fab.catalogue
    if kind == "category":
        category = rng.choice(
            sorted({p.category for p in catalogue.processes.values()})
        )
        return f"category={category}", queries.capabilities_by_category(fab, category)
    if kind == "lab":
        lab = _random_key(catalogue.labs, rng)
        return f"lab={lab}", queries.capabilities_by_lab(fab, lab)
    if kind == "material":
        material = _random_key(catalogue.materials, rng)
        return f"material={material}", queries.capabilities_by_material(fab, material)
    if kind == "price band":
        low, high = rng.choice(queries.PRICE_BANDS)
        answer = queries.capabilities_in_price_range(fab, low, high)
        return f"price=[{low:g},{high:g})", answer
    return "cheapest", queries.cheapest_offers(fab)


def _random_key(tree: Any, rng: random.Random) -> Any:
    """A key of a small OOBTree, uniformly (the catalogue's trees hold tens of
    entries, so listing the keys is cheap)."""
    return rng.choice(list(tree.keys()))


def lookup_capability(fab: VirtualFab, capability_id: int) -> dict[str, Any]:
    """One capability's page: what, where, on what, for how much (and the
    price's revision, which the receipt of looked() carries)."""
    c = fab.library.capabilities[capability_id]
    return {
        "price_revision": c.price_revision,
        "id": c.id,
        "process": c.process.name,
        "category": c.process.category,
        "lab": c.lab.name,
        "material": c.material.name,
        "price": c.price,
        "lot_size": c.lot_size,
        "turnaround_days": c.turnaround_days,
        "ranges": dict(c.ranges),
        "digest": digests.capability(c),
    }


def list_group_sequences(
    fab: VirtualFab, group_name: str
) -> list[tuple[int, str, str]]:
    """(id, name, owner login) of the sequences one group sees: the listing
    page, without the steps (a brute-force walk of all sequences)."""
    return [
        (s.id, s.name, s.owner.login)
        for s in queries.sequences_of_group(fab, group_name)
    ]


def some_sequence_id(fab: VirtualFab, rng: random.Random) -> int:
    """The id of an existing sequence, found in O(log n): the first key at or
    above a random point of the id space (biased towards ids after large
    gaps, which is fine for load)."""
    sequences = fab.sequences
    point = rng.randint(sequences.minKey(), sequences.maxKey())
    for key in sequences.keys(min=point):
        return int(key)
    return int(sequences.minKey())  # pragma: no cover - maxKey() is >= point


def read_sequence(fab: VirtualFab, sequence_id: int) -> dict[str, Any]:
    """One whole sequence as its page shows it: owner, group and every step
    with its process, lab, material, wafers and settings."""
    s = fab.sequences[sequence_id]
    return {
        "id": s.id,
        "name": s.name,
        "owner": s.owner.login,
        "group": s.group.name,
        "steps": [
            (
                st.capability.process.name,
                st.capability.lab.name,
                st.capability.material.name,
                st.wafers,
                dict(st.settings),
            )
            for st in s.steps
        ],
        "digest": digests.sequence(s),
    }


# -- writes -----------------------------------------------------------------


def new_sequence_id(fab: VirtualFab, rng: random.Random) -> int:
    """A random unused id in [FIRST_ORDER_ID, LAST_ORDER_ID]: concurrent users
    never contend for a counter, and their inserts spread over the tree's
    buckets (which resolve concurrent inserts unless a bucket splits)."""
    while True:
        sid = rng.randint(FIRST_ORDER_ID, LAST_ORDER_ID)
        if sid not in fab.sequences:
            return sid


def create_sequence(
    fab: VirtualFab,
    owner: User,
    rng: random.Random,
    steps_min: int = 10,
    steps_max: int = 20,
) -> Created:
    """A customer orders a new sequence of steps_min..steps_max steps, each a
    random capability with settings inside the capability's ranges, shared
    with one of the owner's groups.  Only new objects, the sequences tree
    and the by-group index are written."""
    capabilities = fab.library.capabilities
    last = capabilities.maxKey()
    sid = new_sequence_id(fab, rng)
    group = rng.choice(owner.groups)
    sequence = ProcessSequence(sid, f"order {sid} of {owner.login}", owner, group)
    for _ in range(rng.randint(steps_min, steps_max)):
        cap = capabilities[rng.randint(1, last)]
        settings = {
            name: generate.draw(rng, low, high)
            for name, (low, high) in cap.ranges.items()
        }
        sequence.append(ProcessStep(cap, rng.randint(1, cap.lot_size), settings))
    fab.add_sequence(sequence)
    return Created(
        sid, owner.login, group.name, len(sequence.steps), digests.sequence(sequence)
    )


def price_range(capability: ProcessCapability) -> tuple[float, float] | None:
    """The catalogue's price range (dollars per lot) for the capability's
    process, or None for a process the shipped catalogue does not know."""
    return price_range_of(capability.process.name)


def price_range_of(process: str) -> tuple[float, float] | None:
    """The catalogue's price range (dollars per lot) of the process named
    *process*, or None for one the shipped catalogue does not know."""
    return _price_ranges().get(process)


@functools.cache
def _price_ranges() -> dict[str, tuple[float, float]]:
    return {
        p["name"]: (float(p["price_usd"][0]), float(p["price_usd"][1]))
        for p in generate.load_catalogue().processes
    }


def change_price(fab: VirtualFab, capability_id: int, rng: random.Random) -> Repriced:
    """A lab reprices an offer: a new price inside the process's catalogue
    range, and the capability's revision counted up.  Two users repricing
    the same capability at once conflict (it has no conflict resolution).
    The price goes through the library, which keeps its price indexes right;
    repricing different capabilities touches shared index buckets, whose
    concurrent changes BTrees resolve unless a bucket splits."""
    cap = fab.library.capabilities[capability_id]
    low, high = price_range(cap) or (cap.price, cap.price)
    return _reprice(fab, cap, rng.uniform(low, high))


def _reprice(fab: VirtualFab, cap: ProcessCapability, price: float) -> Repriced:
    read_revision, read_cents = cap.price_revision, cents(cap.price)
    read_digest = digests.capability(cap)
    fab.library.reprice(cap, price)
    cap.price_revision += 1
    return Repriced(
        cap.id,
        cap.price_revision,
        cents(cap.price),
        read_revision,
        read_cents,
        digests.capability(cap),
        read_digest,
    )


def match_price(fab: VirtualFab, capability_id: int, rival_id: int) -> Matched:
    """A lab matches its offer's price to a rival offer's (kept inside its
    own catalogue range), reading the rival with readCurrent: the commit
    fails if the rival changed meanwhile.  Two labs matching each other's
    offers at once write different objects and read the other's: without
    readCurrent, snapshot isolation lets both commit (write skew); with it,
    ZODB promises one fails."""
    library = fab.library
    cap, rival = library.capabilities[capability_id], library.capabilities[rival_id]
    seen = looked_at(rival)  # loaded: readCurrent names the revision read
    if rival._p_jar is not None:
        rival._p_jar.readCurrent(rival)
    low, high = price_range(cap) or (cap.price, cap.price)
    return Matched(_reprice(fab, cap, min(max(rival.price, low), high)), seen)


def reprice_pair(
    fab: VirtualFab, first_id: int, second_id: int, rng: random.Random
) -> RepricedPair:
    """A lab reprices two offers in one transaction: a reader of both must
    see both changes or neither."""
    return RepricedPair(
        change_price(fab, first_id, rng), change_price(fab, second_id, rng)
    )


def compare_offers(fab: VirtualFab, first_id: int, second_id: int) -> Compared:
    """A customer compares two offers side by side, in one snapshot."""
    capabilities = fab.library.capabilities
    return Compared(
        looked_at(capabilities[first_id]), looked_at(capabilities[second_id])
    )


def looked_at(c: ProcessCapability) -> Looked:
    """A Looked receipt of capability *c* as this transaction sees it."""
    return Looked(c.id, c.price_revision, cents(c.price), digests.capability(c))


def looked(page: dict[str, Any]) -> Looked:
    """The receipt of a lookup_capability page."""
    return Looked(
        page["id"], page["price_revision"], cents(page["price"]), page["digest"]
    )


def sequence_read(page: dict[str, Any]) -> SequenceRead:
    """The receipt of a read_sequence page."""
    return SequenceRead(page["id"], len(page["steps"]), page["digest"])


def transfer_wafers(fab: VirtualFab, rng: random.Random) -> Transferred:
    """One lab sends some of its blank wafers to another: both labs' stock
    and stock revision change in one transaction, so the total over all labs
    stays what it was.  Two transfers touching a lab at once conflict (a lab
    has no conflict resolution): that is the contention a checker needs."""
    labs = fab.catalogue.labs
    names = list(labs.keys())
    source_name, target_name = rng.sample(names, 2)
    source, target = labs[source_name], labs[target_name]
    wafers = rng.randint(0, min(25, source.wafer_stock))
    record = []
    seen = []
    for lab, delta in ((source, -wafers), (target, wafers)):
        read = lab.stock_revision, lab.wafer_stock
        read_digest = digests.lab(lab)
        lab.wafer_stock += delta
        lab.stock_revision += 1
        record.append((lab.name, *read, lab.stock_revision, lab.wafer_stock))
        seen.append((read_digest, digests.lab(lab)))
    return Transferred(wafers, tuple(record), tuple(seen))


def audit_stock(fab: VirtualFab) -> Audited:
    """Every lab's stock as this transaction's snapshot sees it, and their
    sum: a serial order of transfers never changes the sum."""
    labs: list[Lab] = list(fab.catalogue.labs.values())
    seen = tuple((lab.name, lab.stock_revision, lab.wafer_stock) for lab in labs)
    return Audited(
        sum(stock for _, _, stock in seen), seen, tuple(map(digests.lab, labs))
    )


def witness(fab: VirtualFab, receipt: Any) -> Any:
    """A persistent object the write of *receipt* stored (its _p_serial is
    the committing transaction's id once committed), or None."""
    if isinstance(receipt, Created):
        return fab.sequences.get(receipt.sequence_id)
    if isinstance(receipt, Repriced):
        return fab.library.capabilities.get(receipt.capability_id)
    if isinstance(receipt, Transferred):
        return fab.catalogue.labs.get(receipt.labs[0][0])
    if isinstance(receipt, Matched):
        return fab.library.capabilities.get(receipt.change.capability_id)
    if isinstance(receipt, RepricedPair):
        return fab.library.capabilities.get(receipt.first.capability_id)
    return None
