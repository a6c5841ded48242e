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

Large collections are BTrees (never one huge PersistentList: see the pickler
memo trap in the design notes); small fixed-size lists live inside their
owner's pickle.
"""

from __future__ import annotations

from typing import Any

from BTrees.IOBTree import IOBTree
from BTrees.OOBTree import OOBTree
from persistent import Persistent


class VirtualFab(Persistent):
    """The root of one data set: who (directory), what can be done
    (catalogue), who offers it (library) and what was ordered (sequences)."""

    def __init__(self) -> None:
        self.directory = Directory()
        self.catalogue = Catalogue()
        self.library = ProcessLibrary()
        self.sequences: IOBTree = IOBTree()  # {sequence id -> ProcessSequence}


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


class Lab(Persistent):
    """A fab site offering capabilities ("the fab at UC Berkeley")."""

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
    """The collection of all capabilities, by id."""

    def __init__(self) -> None:
        self.capabilities: IOBTree = IOBTree()  # {capability id -> ProcessCapability}

    def add(self, capability: ProcessCapability) -> ProcessCapability:
        self.capabilities[capability.id] = capability
        return capability

    def __len__(self) -> int:
        return len(self.capabilities)


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
