"""The rules about the data's structure (the consistency check's index
drift and invalid data): each index against the objects it indexes, both
ways, and BTrees, prices and references that are not valid at all."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from scenarios.checker.readback import FinalRead
from vfab import operations
from vfab.model import ID_BITS, ID_MASK, cents, price_key

#: add(kind, text): record one violation.
Add = Callable[[str, str], None]


def _money(value: int) -> str:
    return f"${value / 100:,.2f}"


def indexes(final: FinalRead, add: Add) -> int:
    """Index drift: every index of *final* against its objects; the number
    of index entries looked at."""
    entries = 0
    if "library.by_category" not in final.indexes:
        if final.offers and "the library's indexes" not in final.unread:
            add("index drift", "the library has no indexes (never built)")
    else:
        expected: dict[str, dict[Any, set[int]]] = {
            "library.by_category": defaultdict(set),
            "library.by_lab": defaultdict(set),
            "library.by_material": defaultdict(set),
            "library.by_process_price": defaultdict(set),
        }
        prices: set[int] = set()
        for cid, offer in final.offers.items():
            expected["library.by_category"][offer.category].add(cid)
            expected["library.by_lab"][offer.lab].add(cid)
            expected["library.by_material"][offer.material].add(cid)
            key = price_key(cents(offer.price), cid)
            prices.add(key)
            expected["library.by_process_price"][offer.process].add(key)
        for name, want in expected.items():
            say = _keys if name == "library.by_process_price" else _cap_ids
            entries += _compare_map(add, name, final.indexes.get(name, {}), want, say)
        if final.by_price is not None:
            entries += _compare_set(add, "library.by_price", final.by_price, prices)
        if final.count is not None and final.count != len(final.offers):
            add(
                "index drift",
                f"library.count says {final.count} capabilities, the library "
                f"holds {len(final.offers)}",
            )
    by_group = final.indexes.get("sequences_by_group")
    if by_group is not None:
        groups: dict[str, set[int]] = defaultdict(set)
        for sid, group in final.groups.items():
            groups[group].add(sid)
        entries += _compare_map(add, "sequences_by_group", by_group, groups, _seq_ids)
    return entries


def invalid(final: FinalRead, add: Add) -> None:
    """Invalid data: BTrees failing their check, prices outside their
    catalogue range, steps that refer to no capability of the library."""
    for text in final.tree_problems:
        add("invalid data", text)
    for cid, offer in sorted(final.offers.items()):
        bounds = operations.price_range_of(offer.process)
        if bounds is not None and not bounds[0] <= offer.price <= bounds[1]:
            add(
                "invalid data",
                f"capability {cid}: price {offer.price} outside its catalogue "
                f"range [{bounds[0]:g}, {bounds[1]:g}]",
            )
    for sid, text in final.bad_references:
        add("invalid data", f"sequence {sid} {text}")


def _compare_map(
    add: Add,
    name: str,
    have: dict[Any, set[int]],
    want: dict[Any, set[int]],
    say: Callable[[Iterable[int]], str],
) -> int:
    n = 0
    for key in sorted(have.keys() | want.keys(), key=str):
        n += len(have.get(key, ()))
        missing = want.get(key, set()) - have.get(key, set())
        extra = have.get(key, set()) - want.get(key, set())
        if missing or extra:
            add("index drift", f"{name}[{key!r}]: {_drift(missing, extra, say)}")
    return n


def _compare_set(add: Add, name: str, have: set[int], want: set[int]) -> int:
    missing, extra = want - have, have - want
    if missing or extra:
        add("index drift", f"{name}: {_drift(missing, extra, _keys)}")
    return len(have)


def _cap_ids(ids: Iterable[int]) -> str:
    return ", ".join(f"capability {i}" for i in sorted(ids)[:5])


def _seq_ids(ids: Iterable[int]) -> str:
    return ", ".join(f"sequence {i}" for i in sorted(ids)[:5])


def _keys(keys: Iterable[int]) -> str:
    return ", ".join(
        f"capability {k & ID_MASK} at {_money(k >> ID_BITS)}" for k in sorted(keys)[:5]
    )


def _drift(
    missing: set[int], extra: set[int], say: Callable[[Iterable[int]], str]
) -> str:
    parts = []
    if missing:
        parts.append(f"{len(missing)} missing ({say(missing)})")
    if extra:
        parts.append(f"{len(extra)} extra ({say(extra)})")
    return ", ".join(parts)
