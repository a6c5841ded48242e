"""What one user of the exchange does to a data set, one operation at a time,
and the rules the data must still obey after many users did it at once.

These are the units of concurrent load (scenarios.load.session times them, in a
transaction each): browse the library, look up a capability, order a new
sequence of steps, change a capability's price, list a group's sequences,
read one whole sequence.  Each takes the VirtualFab and a random.Random and
returns plain values; none commits, none knows about storages.

Writes return a receipt that the caller records only once the transaction
has committed; check() then compares the receipts with what is stored.
"""

from __future__ import annotations

import dataclasses
import functools
import random
from collections.abc import Iterable
from typing import Any

from vfab import generate, queries
from vfab.model import ProcessCapability, ProcessSequence, ProcessStep, User, VirtualFab

#: Ids of sequences made by operations start here, far above the generator's
#: (1..30 per scale unit), and stay below IOBTree's 32-bit key limit.
FIRST_ORDER_ID = 1 << 24
LAST_ORDER_ID = (1 << 31) - 1


@dataclasses.dataclass(frozen=True)
class Created:
    """Receipt of create_sequence: what the user believes it committed."""

    sequence_id: int
    owner: str  # login
    group: str
    steps: int


@dataclasses.dataclass(frozen=True)
class Repriced:
    """Receipt of change_price: the capability's revision this change made."""

    capability_id: int
    revision: int


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
    """One capability's page: what, where, on what, for how much."""
    c = fab.library.capabilities[capability_id]
    return {
        "id": c.id,
        "process": c.process.name,
        "category": c.process.category,
        "lab": c.lab.name,
        "material": c.material.name,
        "price": c.price,
        "lot_size": c.lot_size,
        "turnaround_days": c.turnaround_days,
        "ranges": dict(c.ranges),
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
    with one of the owner's groups.  Only new objects and the sequences tree
    are written."""
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
    fab.sequences[sid] = sequence
    return Created(sid, owner.login, group.name, len(sequence.steps))


def price_range(capability: ProcessCapability) -> tuple[float, float] | None:
    """The catalogue's price range (dollars per lot) for the capability's
    process, or None for a process the shipped catalogue does not know."""
    return _price_ranges().get(capability.process.name)


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
    library = fab.library
    cap = library.capabilities[capability_id]
    low, high = price_range(cap) or (cap.price, cap.price)
    library.reprice(cap, rng.uniform(low, high))
    cap.price_revision += 1
    return Repriced(cap.id, cap.price_revision)


# -- invariants -------------------------------------------------------------


@dataclasses.dataclass
class CheckReport:
    """What check() looked at and what it found wrong (empty: all held)."""

    sequences_checked: int = 0
    repricings_checked: int = 0
    capabilities_checked: int = 0
    #: how many problems were found; the first few are described in problems
    found: int = 0
    problems: list[str] = dataclasses.field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.found

    def summary(self) -> str:
        what = (
            f"{self.sequences_checked} created sequences, "
            f"{self.repricings_checked} price changes, "
            f"{self.capabilities_checked} capabilities"
        )
        if self.ok:
            return f"invariants hold: {what} checked"
        return f"invariants violated ({self.found} problems) over {what}"


def check(
    fab: VirtualFab,
    created: Iterable[Created] = (),
    repriced: Iterable[Repriced] = (),
    max_problems: int = 20,
) -> CheckReport:
    """Check the data against what users reported committing:

    - every reported sequence is stored, with its owner, group and number of
      steps, each step ordering a capability of the library with wafers in
      1..lot size and settings inside the capability's ranges;
    - every capability's price is inside its process's catalogue range;
    - no two reported price changes of a capability claim the same revision
      (that would be a lost update), and none is above the stored revision;
    - the sequences and capabilities BTrees are internally consistent.
    """
    report = CheckReport()

    def problem(text: str) -> None:
        report.found += 1
        if report.found <= max_problems:
            report.problems.append(text)
        elif report.found == max_problems + 1:
            report.problems.append("... (more not listed)")

    for tree_name, tree in (
        ("sequences", fab.sequences),
        ("library", fab.library.capabilities),
    ):
        try:
            tree._check()
        except AssertionError as e:
            problem(f"{tree_name} BTree is inconsistent: {e}")

    capabilities = fab.library.capabilities
    for r in created:
        report.sequences_checked += 1
        s = fab.sequences.get(r.sequence_id)
        if s is None:
            problem(f"sequence {r.sequence_id} reported created is not stored")
            continue
        if (s.owner.login, s.group.name, len(s.steps)) != (r.owner, r.group, r.steps):
            problem(
                f"sequence {r.sequence_id}: stored owner/group/steps "
                f"{s.owner.login}/{s.group.name}/{len(s.steps)}, reported "
                f"{r.owner}/{r.group}/{r.steps}"
            )
        for n, step in enumerate(s.steps, 1):
            cap = step.capability
            if capabilities.get(cap.id) is not cap:
                problem(
                    f"sequence {r.sequence_id} step {n}: capability {cap.id} "
                    "is not the library's"
                )
            if not 1 <= step.wafers <= cap.lot_size:
                problem(
                    f"sequence {r.sequence_id} step {n}: {step.wafers} wafers, "
                    f"lot size {cap.lot_size}"
                )
            for name, value in step.settings.items():
                low, high = cap.ranges.get(name, (value, value))
                if not low <= value <= high:
                    problem(
                        f"sequence {r.sequence_id} step {n}: {name}={value} "
                        f"outside [{low}, {high}]"
                    )

    claimed: dict[int, set[int]] = {}
    for p in repriced:
        report.repricings_checked += 1
        revisions = claimed.setdefault(p.capability_id, set())
        if p.revision in revisions:
            problem(
                f"capability {p.capability_id}: two price changes both made "
                f"revision {p.revision} (a lost update)"
            )
        revisions.add(p.revision)

    for cap in capabilities.values():
        report.capabilities_checked += 1
        bounds = price_range(cap)
        if bounds is not None and not bounds[0] <= cap.price <= bounds[1]:
            problem(
                f"capability {cap.id}: price {cap.price} outside "
                f"[{bounds[0]:g}, {bounds[1]:g}]"
            )
        highest = max(claimed.get(cap.id, ()), default=0)
        if highest > cap.price_revision:
            problem(
                f"capability {cap.id}: revision {highest} reported, "
                f"{cap.price_revision} stored"
            )
    for cid in claimed.keys() - set(capabilities.keys()):
        problem(f"capability {cid} reported repriced does not exist")
    return report
