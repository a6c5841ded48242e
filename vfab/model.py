"""The slimmed virtual fab: the persistent classes.

Processes exist at three levels, as in the MEMS Exchange's own words:
a *Process* is the abstraction ("there exists such a thing as plasma
etching"), a *ProcessCapability* is a lab's concrete offering of it on a
material at a price, and a *ProcessStep* is a customer's order of a
capability with chosen parameter values.  A *ProcessSequence* is an ordered
list of steps owned by a user and visible to a group.

Pickled class paths are an interface: a database written by this suite
stores ``vfab.model.<Class>`` in every record.  Never move or rename a class
here; add new ones beside them.

Large collections are BTrees, never one huge PersistentList: ZODB pickles
every object of a commit with one pickler whose memo-clearing costs grow
with the largest memo it held, so one pickle of N references makes every
later store of that commit O(N) (scenarios/sweep measures it).  Small
fixed-size lists live inside their owner's pickle.
"""

from __future__ import annotations

from typing import Any

from BTrees.IIBTree import IITreeSet
from BTrees.IOBTree import IOBTree
from BTrees.Length import Length
from BTrees.LLBTree import LLTreeSet
from BTrees.OOBTree import OOBTree
from persistent import Persistent

#: Capability ids and prices packed into one 64-bit key for the price indexes:
#: price in cents in the high half, id in the low half, so that keys sort by
#: (price, id) and a range of prices is a range of keys.
ID_BITS = 32
ID_MASK = (1 << ID_BITS) - 1


def cents(price: float) -> int:
    """A price in dollars (two decimals) as whole cents."""
    return round(price * 100)


def price_key(price_cents: int, capability_id: int) -> int:
    """The price-index key of a capability: sorts by price, then id."""
    return (price_cents << ID_BITS) | capability_id


def _index_add(index: OOBTree, key: str, cid: int) -> None:
    ids = index.get(key)
    if ids is None:
        ids = index[key] = IITreeSet()
    ids.add(cid)


class VirtualFab(Persistent):
    """The root of one data set: who (directory), what can be done
    (catalogue), who offers it (library) and what was ordered (sequences).

    add_sequence() keeps the sequences' by-group index right; storing into
    *sequences* directly leaves it stale (index_sequences() rebuilds it)."""

    # A fab pickled before the group index existed loads with this class
    # default; add_sequence() and the indexed query build the index.
    sequences_by_group: OOBTree | None = None

    def __init__(self) -> None:
        self.directory = Directory()
        self.catalogue = Catalogue()
        self.library = ProcessLibrary()
        self.sequences: IOBTree = IOBTree()  # {sequence id -> ProcessSequence}
        self.sequences_by_group = OOBTree()  # {group name -> IITreeSet of ids}

    def add_sequence(self, sequence: ProcessSequence) -> ProcessSequence:
        """Add *sequence*, keeping the by-group index right."""
        self.sequences[sequence.id] = sequence
        if self.sequences_by_group is None:
            self.index_sequences()
        else:
            _index_add(self.sequences_by_group, sequence.group.name, sequence.id)
        return sequence

    def index_sequences(self) -> None:
        """Build the by-group index from the sequences (a full walk)."""
        self.sequences_by_group = OOBTree()
        for s in self.sequences.values():
            _index_add(self.sequences_by_group, s.group.name, s.id)


class Directory(Persistent):
    """Users and groups, by login and by name."""

    def __init__(self) -> None:
        self.users: OOBTree = OOBTree()  # {login -> User}
        self.groups: OOBTree = OOBTree()  # {name -> Group}

    def add_user(self, user: User) -> User:
        self.users[user.login] = user
        return user

    def add_group(self, group: Group) -> Group:
        self.groups[group.name] = group
        return group


class User(Persistent):
    """A customer or staff member of the exchange."""

    def __init__(self, login: str, name: str, email: str) -> None:
        self.login = login
        self.name = name
        self.email = email
        self.groups: tuple[Group, ...] = ()

    def __repr__(self) -> str:
        return f"<User {self.login}>"


class Group(Persistent):
    """A team of users; sequences are shared with one group."""

    def __init__(self, name: str, title: str) -> None:
        self.name = name
        self.title = title
        self.members: list[User] = []  # a few users: kept in this pickle

    def add_member(self, user: User) -> None:
        self.members.append(user)
        self._p_changed = True
        user.groups = (*user.groups, self)

    def __repr__(self) -> str:
        return f"<Group {self.name}>"


class Catalogue(Persistent):
    """The theoretical side: materials, processes and the labs that exist."""

    def __init__(self) -> None:
        self.materials: OOBTree = OOBTree()  # {name -> Material}
        self.processes: OOBTree = OOBTree()  # {name -> Process}
        self.labs: OOBTree = OOBTree()  # {name -> Lab}


#: Wafers each lab holds before any transfer (vfab.operations.transfer_wafers
#: moves them between labs; the total over all labs never changes).
STOCK_PER_LAB = 1000


class Lab(Persistent):
    """A fab site offering capabilities ("the fab at UC Berkeley").

    *wafer_stock* is the blank wafers it keeps; transfers move them between
    labs, so their sum over the catalogue is a conservation rule a reader
    can check inside one snapshot.  *stock_revision* counts the changes."""

    # Class defaults, so labs pickled before the stock existed read as full.
    wafer_stock: int = STOCK_PER_LAB
    stock_revision: int = 0

    def __init__(self, name: str, location: str) -> None:
        self.name = name
        self.location = location

    def __repr__(self) -> str:
        return f"<Lab {self.name}>"


class Material(Persistent):
    """Something a process works on: a substrate or a film."""

    def __init__(self, name: str, kind: str) -> None:
        self.name = name
        self.kind = kind

    def __repr__(self) -> str:
        return f"<Material {self.name}>"


class ParameterDefinition(Persistent):
    """A knob of a process, its unit and the physically sensible range."""

    def __init__(self, name: str, unit: str, minimum: float, maximum: float) -> None:
        self.name = name
        self.unit = unit
        self.minimum = minimum
        self.maximum = maximum

    def __repr__(self) -> str:
        return f"<ParameterDefinition {self.name} [{self.unit}]>"


class Process(Persistent):
    """The abstraction: "there exists such a thing as plasma etching"."""

    def __init__(
        self,
        name: str,
        category: str,
        description: str,
        parameters: tuple[ParameterDefinition, ...],
    ) -> None:
        self.name = name
        self.category = category
        self.description = description
        self.parameters = parameters

    def __repr__(self) -> str:
        return f"<Process {self.name} ({self.category})>"


class ProcessCapability(Persistent):
    """A lab's concrete offering: "UC Berkeley offers plasma etching of
    aluminum at $485 for 12 wafers".  *ranges* maps a parameter name to the
    (low, high) the lab can do, within the definition's range."""

    #: How many times the price was changed (vfab.operations.change_price);
    #: a class default, so records written before it existed read as 0.
    price_revision: int = 0

    def __init__(
        self,
        id: int,
        process: Process,
        lab: Lab,
        material: Material,
        price: float,
        lot_size: int,
        turnaround_days: int,
        ranges: dict[str, tuple[float, float]],
    ) -> None:
        self.id = id
        self.process = process
        self.lab = lab
        self.material = material
        self.price = price
        self.lot_size = lot_size
        self.turnaround_days = turnaround_days
        self.ranges = ranges

    def __repr__(self) -> str:
        return (
            f"<ProcessCapability {self.id}: {self.process.name} of "
            f"{self.material.name} at {self.lab.name}, ${self.price:.2f}>"
        )


class ProcessLibrary(Persistent):
    """The collection of all capabilities, by id, with BTree indexes.

    add() and reprice() keep the indexes right; setting a capability's price
    directly leaves them stale (reindex() rebuilds them from the
    capabilities).  Index entries hold capability ids, not the capabilities,
    so answering from an index loads index buckets and nothing else.

    The price indexes take a key per capability in one tree (price_key), not a
    set per distinct price: a set per price would be one persistent object
    per capability.
    """

    # A library pickled before the indexes existed loads with these class
    # defaults; indexed() builds the indexes on first use.
    count: Length | None = None
    by_category: OOBTree | None = None
    by_lab: OOBTree | None = None
    by_material: OOBTree | None = None
    by_price: LLTreeSet | None = None
    by_process_price: OOBTree | None = None

    def __init__(self) -> None:
        self.capabilities: IOBTree = IOBTree()  # {capability id -> ProcessCapability}
        self._new_indexes()

    def _new_indexes(self) -> None:
        self.count = Length()  # len(capabilities) without loading every bucket
        self.by_category = OOBTree()  # {process category -> IITreeSet of ids}
        self.by_lab = OOBTree()  # {lab name -> IITreeSet of ids}
        self.by_material = OOBTree()  # {material name -> IITreeSet of ids}
        self.by_price = LLTreeSet()  # {price_key(cents, id)}
        self.by_process_price = OOBTree()  # {process name -> LLTreeSet of price_key}

    def add(self, capability: ProcessCapability) -> ProcessCapability:
        """Add *capability* (a new id) to the library and its indexes."""
        if self.count is None:
            self.reindex()
        assert self.count is not None
        self.capabilities[capability.id] = capability
        self.count.change(1)
        self._index(capability)
        return capability

    def reprice(self, capability: ProcessCapability, price: float) -> None:
        """Set *capability*'s price (dollars, rounded to cents), keeping the
        price indexes right."""
        price = round(price, 2)
        if self.by_price is None:
            self.reindex()
        assert self.by_price is not None and self.by_process_price is not None
        old = price_key(cents(capability.price), capability.id)
        new = price_key(cents(price), capability.id)
        if old != new:
            by_process = self.by_process_price[capability.process.name]
            self.by_price.remove(old)
            by_process.remove(old)
            self.by_price.add(new)
            by_process.add(new)
        capability.price = price

    def _index(self, c: ProcessCapability) -> None:
        assert self.by_category is not None and self.by_lab is not None
        assert self.by_material is not None and self.by_price is not None
        assert self.by_process_price is not None
        _index_add(self.by_category, c.process.category, c.id)
        _index_add(self.by_lab, c.lab.name, c.id)
        _index_add(self.by_material, c.material.name, c.id)
        key = price_key(cents(c.price), c.id)
        self.by_price.add(key)
        by_process = self.by_process_price.get(c.process.name)
        if by_process is None:
            by_process = self.by_process_price[c.process.name] = LLTreeSet()
        by_process.add(key)

    def reindex(self) -> None:
        """Rebuild every index from the capabilities (a full walk)."""
        self._new_indexes()
        assert self.count is not None
        for c in self.capabilities.values():
            self.count.change(1)
            self._index(c)

    def indexed(self) -> ProcessLibrary:
        """This library, its indexes built if it predates them."""
        if self.by_process_price is None:
            self.reindex()
        return self

    def __len__(self) -> int:
        if self.count is None:
            return len(self.capabilities)
        return int(self.count())


class ProcessStep(Persistent):
    """A customer's order of a capability: "Joe Blow wants UC Berkeley to do
    plasma etching of his 15 wafers to a depth of 1.5 microns"."""

    def __init__(
        self, capability: ProcessCapability, wafers: int, settings: dict[str, float]
    ) -> None:
        self.capability = capability
        self.wafers = wafers
        self.settings = settings  # {parameter name -> chosen value}

    def __repr__(self) -> str:
        return f"<ProcessStep {self.capability.process.name} x{self.wafers}>"


class ProcessSequence(Persistent):
    """An ordered list of steps, owned by a user, visible to a group.

    A sequence has tens of steps at most, so the list of references lives
    in this object's pickle; the steps are objects of their own.
    """

    def __init__(self, id: int, name: str, owner: User, group: Group) -> None:
        self.id = id
        self.name = name
        self.owner = owner
        self.group = group
        self.steps: list[ProcessStep] = []

    def append(self, step: ProcessStep) -> None:
        self.steps.append(step)
        self._p_changed = True

    def __repr__(self) -> str:
        return f"<ProcessSequence {self.id} {self.name!r}: {len(self.steps)} steps>"


#: Every persistent class of the model, for census and documentation.
CLASSES: tuple[type[Any], ...] = (
    VirtualFab,
    Directory,
    User,
    Group,
    Catalogue,
    Lab,
    Material,
    ParameterDefinition,
    Process,
    ProcessCapability,
    ProcessLibrary,
    ProcessStep,
    ProcessSequence,
)
