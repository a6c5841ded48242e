"""The deterministic data generator.

A data set is named by a size (small, medium, large, xlarge) or a scale
factor; small is exactly the MEMS Exchange 2000 data set: 20 users, 10
groups, 250 process capabilities, 30 process sequences of 10 to 20 steps.
Every count grows linearly with the scale.

Each builder takes its own random.Random, seeded from the run's seed and the
builder's name, so the same seed and size always produce the same objects
whatever ran before.

Builders take an optional *checkpoint*, called with the number of persistent
objects just attached to the data set (a user, a capability, a sequence and
its steps...).  The caller may commit there (batches of objects per
transaction, so that a million objects fit in bounded memory); what is built
does not depend on it.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import random
from collections.abc import Callable
from importlib import resources
from typing import Any

from vfab.model import (
    Group,
    Lab,
    Material,
    ParameterDefinition,
    Process,
    ProcessCapability,
    ProcessSequence,
    ProcessStep,
    User,
    VirtualFab,
)

#: size name -> scale factor.  xlarge makes at least 1,000,000 persistent
#: objects even if every sequence drew the minimum of 10 steps: 610 objects
#: per scale unit plus the labs (DataSpec.min_objects); with the average of
#: 15 steps it is about 1.3 million.
SIZES: dict[str, int] = {"small": 1, "medium": 10, "large": 100, "xlarge": 1700}

DEFAULT_SEED = 2000

#: Called with the number of persistent objects just added (see above).
Checkpoint = Callable[[int], None]


def no_checkpoint(objects: int) -> None:
    pass


@dataclasses.dataclass(frozen=True)
class DataSpec:
    """How many of each thing a data set holds."""

    scale: int
    users: int
    groups: int
    capabilities: int
    sequences: int
    steps_min: int = 10
    steps_max: int = 20

    @classmethod
    def for_scale(cls, scale: int) -> DataSpec:
        if scale < 1:
            raise ValueError(f"scale must be at least 1, not {scale}")
        return cls(
            scale=scale,
            users=20 * scale,
            groups=10 * scale,
            capabilities=250 * scale,
            sequences=30 * scale,
        )

    @classmethod
    def for_size(cls, size: str) -> DataSpec:
        try:
            return cls.for_scale(SIZES[size])
        except KeyError:
            raise ValueError(
                f"unknown size {size!r}; choose from {', '.join(SIZES)}"
            ) from None

    @property
    def name(self) -> str:
        for name, scale in SIZES.items():
            if scale == self.scale:
                return name
        return f"scale {self.scale}"

    def labs(self, catalogue: ShippedCatalogue) -> int:
        return len(catalogue.labs) * self.scale

    def min_objects(self, catalogue: ShippedCatalogue) -> int:
        """Persistent objects at least in a data set of this spec (BTree
        nodes not counted): every sequence drawing the fewest steps."""
        fixed = 4 + len(catalogue.materials) + len(catalogue.processes)
        fixed += sum(len(p["parameters"]) for p in catalogue.processes)
        return (
            fixed
            + self.labs(catalogue)
            + self.users
            + self.groups
            + self.capabilities
            + self.sequences * (1 + self.steps_min)
        )


@dataclasses.dataclass(frozen=True)
class ShippedCatalogue:
    """The shipped process catalogue, as plain data (vfab/data/processes.json)."""

    materials: tuple[dict[str, Any], ...]
    labs: tuple[dict[str, Any], ...]
    processes: tuple[dict[str, Any], ...]


@functools.lru_cache(maxsize=1)
def load_catalogue() -> ShippedCatalogue:
    """Parse the shipped catalogue once per process."""
    text = resources.files("vfab").joinpath("data/processes.json").read_text("utf-8")
    data = json.loads(text)
    return ShippedCatalogue(
        materials=tuple(data["materials"]),
        labs=tuple(data["labs"]),
        processes=tuple(data["processes"]),
    )


def draw(rng: random.Random, low: float, high: float) -> float:
    """A value in [low, high] rounded to 4 significant digits (parameters
    span 1e-7 Torr to 1e15 ions/cm^2) and clamped back into the range."""
    value = float(f"{rng.uniform(low, high):.4g}")
    return min(max(value, low), high)


def rng_for(seed: int, builder: str) -> random.Random:
    """A generator private to one builder (str seeds hash stably)."""
    return random.Random(f"{seed}/{builder}")


_FIRST = (
    "Ada Alan Barbara Claude Donald Edsger Frances Grace Hedy John Katherine "
    "Ken Linus Margaret Niklaus Radia Seymour Shafi Sophie Tim Vint Whitfield"
).split()
_LAST = (
    "Allen Backus Berners-Lee Cerf Diffie Dijkstra Goldwasser Hamilton Hopper "
    "Johnson Kahn Knuth Lamarr Liskov Lovelace McCarthy Perlman Ritchie "
    "Shannon Thompson Torvalds Turing Wilson Wirth"
).split()
_TEAMS = (
    "MEMS Sensors Optics Microfluidics Actuators Packaging RF Thin-film "
    "Bio-MEMS Power Inertial Acoustics"
).split()


def create_users_groups(
    fab: VirtualFab,
    spec: DataSpec,
    seed: int,
    checkpoint: Checkpoint = no_checkpoint,
) -> None:
    """Groups first, then users, each user joining one to three groups."""
    rng = rng_for(seed, "users/groups")
    directory = fab.directory
    groups = [
        directory.add_group(Group(f"g{i:05d}", f"{rng.choice(_TEAMS)} team {i}"))
        for i in range(1, spec.groups + 1)
    ]
    checkpoint(len(groups))
    for i in range(1, spec.users + 1):
        first, last = rng.choice(_FIRST), rng.choice(_LAST)
        login = f"u{i:06d}"
        user = directory.add_user(
            User(login, f"{first} {last}", f"{login}@fab.example.org")
        )
        for group in rng.sample(groups, rng.randint(1, min(3, len(groups)))):
            group.add_member(user)
        checkpoint(1)


def convert_processes(
    fab: VirtualFab,
    spec: DataSpec,
    seed: int,
    catalogue: ShippedCatalogue,
    checkpoint: Checkpoint = no_checkpoint,
) -> None:
    """Turn the catalogue into persistent materials, labs and processes, then
    into spec.capabilities capabilities (lab x process x material offers)."""
    rng = rng_for(seed, "processes")
    cat = fab.catalogue
    for m in catalogue.materials:
        cat.materials[m["name"]] = Material(m["name"], m["kind"])
    checkpoint(len(catalogue.materials))
    labs = []
    for site in range(1, spec.scale + 1):
        for lab in catalogue.labs:
            name = lab["name"] if site == 1 else f"{lab['name']} (site {site})"
            cat.labs[name] = Lab(name, lab["location"])
            labs.append(cat.labs[name])
            checkpoint(1)
    offers = []
    for p in catalogue.processes:
        params = tuple(
            ParameterDefinition(d["name"], d["unit"], d["min"], d["max"])
            for d in p["parameters"]
        )
        process = Process(p["name"], p["category"], p["description"], params)
        cat.processes[p["name"]] = process
        materials = [cat.materials[name] for name in p["materials"]]
        offers.append((process, materials, p))
        checkpoint(1 + len(params))

    library = fab.library
    for cid in range(1, spec.capabilities + 1):
        process, materials, p = rng.choice(offers)
        low, high = p["price_usd"]
        ranges = {}
        for d in process.parameters:
            a, b = sorted(draw(rng, d.minimum, d.maximum) for _ in range(2))
            ranges[d.name] = (a, b)
        library.add(
            ProcessCapability(
                id=cid,
                process=process,
                lab=rng.choice(labs),
                material=rng.choice(materials),
                price=round(rng.uniform(low, high), 2),
                lot_size=rng.choice(p["lot_sizes"]),
                turnaround_days=rng.randint(*p["turnaround_days"]),
                ranges=ranges,
            )
        )
        checkpoint(1)


def generate_sequences(
    fab: VirtualFab,
    spec: DataSpec,
    seed: int,
    checkpoint: Checkpoint = no_checkpoint,
) -> None:
    """spec.sequences sequences of steps_min..steps_max steps, each step an
    order of a random capability with settings inside its ranges."""
    rng = rng_for(seed, "sequences")
    users = list(fab.directory.users.values())
    capabilities = fab.library.capabilities
    n_caps = len(fab.library)
    for sid in range(1, spec.sequences + 1):
        owner = rng.choice(users)
        group = rng.choice(owner.groups)
        sequence = ProcessSequence(sid, f"run {sid} of {owner.login}", owner, group)
        for _ in range(rng.randint(spec.steps_min, spec.steps_max)):
            cap = capabilities[rng.randint(1, n_caps)]
            settings = {
                name: draw(rng, low, high) for name, (low, high) in cap.ranges.items()
            }
            sequence.append(ProcessStep(cap, rng.randint(1, cap.lot_size), settings))
        fab.add_sequence(sequence)
        checkpoint(1 + len(sequence.steps))


def build(spec: DataSpec, seed: int = DEFAULT_SEED) -> VirtualFab:
    """A whole data set in memory, outside any database (tests, census)."""
    fab = VirtualFab()
    create_users_groups(fab, spec, seed)
    convert_processes(fab, spec, seed, load_catalogue())
    generate_sequences(fab, spec, seed)
    return fab
