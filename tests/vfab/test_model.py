"""The domain model and the generator: counts per size, determinism."""

from __future__ import annotations

import pickle

import pytest

from vfab import generate, model
from vfab.generate import SIZES, DataSpec, load_catalogue


def census(fab: model.VirtualFab) -> dict[str, int]:
    """Persistent objects reachable from *fab*, per class name (a walk of the
    object graph, independent of the generator's own bookkeeping)."""
    from persistent import Persistent

    seen: dict[int, object] = {}
    stack: list[object] = [fab]
    while stack:
        obj = stack.pop()
        if isinstance(obj, Persistent):
            if id(obj) in seen:
                continue
            seen[id(obj)] = obj
            if hasattr(obj, "__dict__"):
                stack.extend(obj.__dict__.values())
            if hasattr(obj, "values") and callable(obj.values):
                stack.extend(obj.values())
        elif isinstance(obj, (list, tuple)):
            stack.extend(obj)
        elif isinstance(obj, dict):
            stack.extend(obj.values())
    counts: dict[str, int] = {}
    for obj in seen.values():
        name = type(obj).__name__
        counts[name] = counts.get(name, 0) + 1
    return counts


@pytest.fixture(scope="module")
def small() -> model.VirtualFab:
    return generate.build(DataSpec.for_size("small"))


def test_small_is_the_2000_data_set(small: model.VirtualFab) -> None:
    assert len(small.directory.users) == 20
    assert len(small.directory.groups) == 10
    assert len(small.library) == 250
    assert len(small.sequences) == 30
    for seq in small.sequences.values():
        assert 10 <= len(seq.steps) <= 20


@pytest.mark.parametrize("size", ["small", "medium"])
def test_counts_per_size_match_the_spec(size: str) -> None:
    spec = DataSpec.for_size(size)
    cat = load_catalogue()
    counts = census(generate.build(spec))
    assert counts["User"] == spec.users == 20 * SIZES[size]
    assert counts["Group"] == spec.groups
    assert counts["ProcessCapability"] == spec.capabilities
    assert counts["ProcessSequence"] == spec.sequences
    assert counts["Lab"] == len(cat.labs) * spec.scale
    assert counts["Process"] == len(cat.processes)
    assert counts["Material"] == len(cat.materials)
    assert spec.sequences * 10 <= counts["ProcessStep"] <= spec.sequences * 20
    persistent = sum(
        v for k, v in counts.items() if not k.endswith(("Bucket", "BTree"))
    )
    assert persistent >= spec.min_objects(cat)


def test_xlarge_has_a_million_objects() -> None:
    assert DataSpec.for_size("xlarge").min_objects(load_catalogue()) >= 1_000_000


def test_scale_is_linear() -> None:
    assert DataSpec.for_scale(7).capabilities == 7 * 250
    with pytest.raises(ValueError):
        DataSpec.for_scale(0)
    with pytest.raises(ValueError, match="choose from"):
        DataSpec.for_size("huge")


def fingerprint(fab: model.VirtualFab) -> bytes:
    """Every value of a data set, as comparable bytes."""
    rows = []
    for u in fab.directory.users.values():
        rows.append((u.login, u.name, tuple(g.name for g in u.groups)))
    for c in fab.library.capabilities.values():
        rows.append(
            (
                c.id,
                c.process.name,
                c.lab.name,
                c.material.name,
                c.price,
                c.lot_size,
                c.turnaround_days,
                sorted(c.ranges.items()),
            )
        )
    for s in fab.sequences.values():
        rows.append(
            (
                s.id,
                s.owner.login,
                s.group.name,
                [
                    (st.capability.id, st.wafers, sorted(st.settings.items()))
                    for st in s.steps
                ],
            )
        )
    return pickle.dumps(rows)


def test_same_seed_same_data() -> None:
    spec = DataSpec.for_size("small")
    a = generate.build(spec, seed=7)
    b = generate.build(spec, seed=7)
    c = generate.build(spec, seed=8)
    assert fingerprint(a) == fingerprint(b)
    assert fingerprint(a) != fingerprint(c)


def test_values_respect_the_catalogue(small: model.VirtualFab) -> None:
    cat = {p["name"]: p for p in load_catalogue().processes}
    for c in small.library.capabilities.values():
        p = cat[c.process.name]
        assert p["price_usd"][0] <= c.price <= p["price_usd"][1]
        assert c.lot_size in p["lot_sizes"]
        assert c.material.name in p["materials"]
        for d in c.process.parameters:
            low, high = c.ranges[d.name]
            assert d.minimum <= low <= high <= d.maximum
    for s in small.sequences.values():
        assert s.group in s.owner.groups
        for st in s.steps:
            assert 1 <= st.wafers <= st.capability.lot_size
            for name, value in st.settings.items():
                low, high = st.capability.ranges[name]
                assert low <= value <= high


def test_catalogue_is_real_and_broad() -> None:
    cat = load_catalogue()
    assert len(cat.processes) >= 40
    categories = {p["category"] for p in cat.processes}
    assert {
        "deposition",
        "etch",
        "lithography",
        "doping",
        "thermal",
        "metrology",
        "polishing",
    } <= categories
    material_names = {m["name"] for m in cat.materials}
    for p in cat.processes:
        assert set(p["materials"]) <= material_names
        for d in p["parameters"]:
            assert d["min"] < d["max"]


def test_class_paths_are_stable() -> None:
    # Pickled class paths are an interface: a database holds these names.
    assert {f"{c.__module__}.{c.__name__}" for c in model.CLASSES} == {
        f"vfab.model.{n}"
        for n in (
            "VirtualFab",
            "Directory",
            "User",
            "Group",
            "Catalogue",
            "Lab",
            "Material",
            "ParameterDefinition",
            "Process",
            "ProcessCapability",
            "ProcessLibrary",
            "ProcessStep",
            "ProcessSequence",
        )
    }
