"""Questions asked of a data set, as brute-force walks of the object graph.

Every function walks the graph from the VirtualFab down, touching the
attributes a real answer needs, so on a cold cache each walk loads what it
visits.  Results are plain values (ids, names, counts) so that answers from
different storages, or from an indexed form, compare equal.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from vfab.model import ProcessCapability, ProcessSequence, VirtualFab


def _capabilities(fab: VirtualFab) -> Iterator[ProcessCapability]:
    return iter(fab.library.capabilities.values())


def capabilities_by_category(fab: VirtualFab, category: str) -> list[int]:
    """Ids of the capabilities whose process is in *category*."""
    return [c.id for c in _capabilities(fab) if c.process.category == category]


def capabilities_by_lab(fab: VirtualFab, lab_name: str) -> list[int]:
    """Ids of the capabilities offered by the lab named *lab_name*."""
    return [c.id for c in _capabilities(fab) if c.lab.name == lab_name]


def capabilities_by_material(fab: VirtualFab, material_name: str) -> list[int]:
    """Ids of the capabilities that work on the material *material_name*."""
    return [c.id for c in _capabilities(fab) if c.material.name == material_name]


def capabilities_in_price_range(fab: VirtualFab, low: float, high: float) -> list[int]:
    """Ids of the capabilities priced in [low, high) dollars."""
    return [c.id for c in _capabilities(fab) if low <= c.price < high]


def cheapest_offers(fab: VirtualFab) -> dict[str, int]:
    """For each process name, the id of its cheapest capability (ties: the
    lower id)."""
    best: dict[str, ProcessCapability] = {}
    for c in _capabilities(fab):
        name = c.process.name
        held = best.get(name)
        if held is None or (c.price, c.id) < (held.price, held.id):
            best[name] = c
    return {name: c.id for name, c in sorted(best.items())}


#: Price bands (dollars per lot) that "query processes" asks about.
PRICE_BANDS: tuple[tuple[float, float], ...] = (
    (0, 100),
    (100, 500),
    (500, 1000),
    (1000, 5000),
)


def query_processes(fab: VirtualFab, per_kind: int = 5) -> dict[str, Any]:
    """The "query processes" mix of the 2000 suite: the library asked by
    every category, by the first *per_kind* labs and materials, by price
    band, and for the cheapest offer of each process.  Each question is its
    own walk of the library, as a naive application would do it.

    Returns {question: answer} with plain values."""
    catalogue = fab.catalogue
    categories = sorted({p.category for p in catalogue.processes.values()})
    answers: dict[str, Any] = {}
    for category in categories:
        answers[f"category={category}"] = capabilities_by_category(fab, category)
    for lab in list(catalogue.labs.keys())[:per_kind]:
        answers[f"lab={lab}"] = capabilities_by_lab(fab, lab)
    for material in list(catalogue.materials.keys())[:per_kind]:
        answers[f"material={material}"] = capabilities_by_material(fab, material)
    for low, high in PRICE_BANDS:
        answers[f"price=[{low:g},{high:g})"] = capabilities_in_price_range(
            fab, low, high
        )
    answers["cheapest"] = cheapest_offers(fab)
    return answers


def sequences_of_group(fab: VirtualFab, group_name: str) -> list[ProcessSequence]:
    """The sequences visible to the group *group_name*, by walking them all."""
    return [s for s in fab.sequences.values() if s.group.name == group_name]


def query_sequences(fab: VirtualFab, group_name: str | None = None) -> dict[str, Any]:
    """The "query sequences" question of the 2000 suite: list the sequences
    of one group (the first, unless named), each with its steps' process,
    lab and wafer count, as a listing page would show them."""
    if group_name is None:
        group_name = fab.directory.groups.minKey()
    listing = []
    for s in sequences_of_group(fab, group_name):
        steps = [
            (st.capability.process.name, st.capability.lab.name, st.wafers)
            for st in s.steps
        ]
        listing.append((s.id, s.name, s.owner.login, steps))
    return {"group": group_name, "sequences": listing}
