"""Questions asked of a data set: brute-force walks and indexed forms.

The brute-force functions walk the graph from the VirtualFab down, touching
the attributes a real answer needs, so on a cold cache each walk loads what
it visits.  The *_indexed forms answer the same questions from the BTree
indexes the library and the fab keep (vfab.model), loading index buckets and
only the objects the answer shows.  Results are plain values (ids, names,
counts) so that answers from different storages, and from the two forms,
compare equal.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from vfab.model import (
    ID_MASK,
    ProcessCapability,
    ProcessLibrary,
    ProcessSequence,
    VirtualFab,
    price_key,
)


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


def _questions(fab: VirtualFab, per_kind: int) -> tuple[list[str], ...]:
    """What "query processes" asks about: every category, the first
    *per_kind* labs and materials (the same for both forms)."""
    catalogue = fab.catalogue
    categories = sorted({p.category for p in catalogue.processes.values()})
    labs = list(catalogue.labs.keys()[:per_kind])
    materials = list(catalogue.materials.keys()[:per_kind])
    return categories, labs, materials


def query_processes(fab: VirtualFab, per_kind: int = 5) -> dict[str, Any]:
    """The "query processes" mix of the 2000 suite: the library asked by
    every category, by the first *per_kind* labs and materials, by price
    band, and for the cheapest offer of each process.  Each question is its
    own walk of the library, as a naive application would do it.

    Returns {question: answer} with plain values."""
    categories, labs, materials = _questions(fab, per_kind)
    answers: dict[str, Any] = {}
    for category in categories:
        answers[f"category={category}"] = capabilities_by_category(fab, category)
    for lab in labs:
        answers[f"lab={lab}"] = capabilities_by_lab(fab, lab)
    for material in materials:
        answers[f"material={material}"] = capabilities_by_material(fab, material)
    for low, high in PRICE_BANDS:
        answers[f"price=[{low:g},{high:g})"] = capabilities_in_price_range(
            fab, low, high
        )
    answers["cheapest"] = cheapest_offers(fab)
    return answers


def _ids(index: Any, key: str) -> list[int]:
    ids = index.get(key)
    return list(ids) if ids is not None else []


def price_range_indexed(library: ProcessLibrary, low: float, high: float) -> list[int]:
    """Ids of the capabilities priced in [low, high) dollars, from the price
    index; ascending ids, like the walk."""
    assert library.by_price is not None
    lo = price_key(math.ceil(low * 100), 0)
    hi = price_key(math.ceil(high * 100), 0)
    keys = library.by_price.keys(lo, hi, excludemax=True)
    return sorted(k & ID_MASK for k in keys)


def cheapest_offers_indexed(library: ProcessLibrary) -> dict[str, int]:
    """cheapest_offers() from the per-process price index: the first key of
    each process's set is its lowest (price, id)."""
    assert library.by_process_price is not None
    return {
        name: keys.minKey() & ID_MASK
        for name, keys in library.by_process_price.items()
        if keys
    }


def query_processes_indexed(fab: VirtualFab, per_kind: int = 5) -> dict[str, Any]:
    """query_processes() answered from the library's indexes."""
    categories, labs, materials = _questions(fab, per_kind)
    library = fab.library.indexed()
    answers: dict[str, Any] = {}
    for category in categories:
        answers[f"category={category}"] = _ids(library.by_category, category)
    for lab in labs:
        answers[f"lab={lab}"] = _ids(library.by_lab, lab)
    for material in materials:
        answers[f"material={material}"] = _ids(library.by_material, material)
    for low, high in PRICE_BANDS:
        answers[f"price=[{low:g},{high:g})"] = price_range_indexed(library, low, high)
    answers["cheapest"] = cheapest_offers_indexed(library)
    return answers


def sequences_of_group(fab: VirtualFab, group_name: str) -> list[ProcessSequence]:
    """The sequences visible to the group *group_name*, by walking them all."""
    return [s for s in fab.sequences.values() if s.group.name == group_name]


def _listing(sequences: Iterator[ProcessSequence]) -> list[Any]:
    listing = []
    for s in sequences:
        steps = [
            (st.capability.process.name, st.capability.lab.name, st.wafers)
            for st in s.steps
        ]
        listing.append((s.id, s.name, s.owner.login, steps))
    return listing


def query_sequences(fab: VirtualFab, group_name: str | None = None) -> dict[str, Any]:
    """The "query sequences" question of the 2000 suite: list the sequences
    of one group (the first, unless named), each with its steps' process,
    lab and wafer count, as a listing page would show them."""
    if group_name is None:
        group_name = fab.directory.groups.minKey()
    listing = _listing(iter(sequences_of_group(fab, group_name)))
    return {"group": group_name, "sequences": listing}


def query_sequences_indexed(
    fab: VirtualFab, group_name: str | None = None
) -> dict[str, Any]:
    """query_sequences() from the fab's by-group index: only that group's
    sequences are loaded."""
    if group_name is None:
        group_name = fab.directory.groups.minKey()
    if fab.sequences_by_group is None:
        fab.index_sequences()
    assert fab.sequences_by_group is not None
    sequences = fab.sequences
    ids = _ids(fab.sequences_by_group, group_name)
    listing = _listing(sequences[sid] for sid in ids)
    return {"group": group_name, "sequences": listing}
