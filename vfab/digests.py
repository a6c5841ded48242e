"""A short digest of a model object's whole state: what a writer stored, so
that a checker can tell any field changed from what it wrote.

A digest covers every field of the object's own record and, for a
sequence, every field of each of its steps (a sequence and its steps are
written together and read together).  Another persistent object it refers
to (a capability's lab, a sequence's owner) counts by identity, not by
content: its oid where it has one (loading a lab to digest a capability
would cost a round trip after every transfer), its natural key otherwise
(an in-memory data set).  A new step has no oid until its commit, so steps
count by content.

16 hex digits of BLAKE2b: a changed field is missed with probability
2**-64, and 100,000 attempts carry about 2 MB of digests.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any


def _hex(parts: tuple[Any, ...]) -> str:
    return hashlib.blake2b(repr(parts).encode(), digest_size=8).hexdigest()


def _ref(obj: Any, natural: Callable[[Any], Any]) -> Any:
    """*obj* by identity: its oid, or natural(obj) (its natural key, read
    only when there is no oid) in an in-memory data set."""
    oid = obj._p_oid
    return bytes(oid).hex() if oid is not None else natural(obj)


def _name(obj: Any) -> Any:
    return obj.name


def capability(c: Any) -> str:
    """Every field of a ProcessCapability: id, process, lab, material,
    price, price revision, lot size, turnaround and ranges."""
    return _hex(
        (
            c.id,
            _ref(c.process, _name),
            _ref(c.lab, _name),
            _ref(c.material, _name),
            c.price,
            c.price_revision,
            c.lot_size,
            c.turnaround_days,
            tuple(sorted(c.ranges.items())),
        )
    )


def lab(lab: Any) -> str:
    """Every field of a Lab: name, location, wafer stock and its revision."""
    return _hex((lab.name, lab.location, lab.wafer_stock, lab.stock_revision))


def sequence(s: Any) -> str:
    """Every field of a ProcessSequence and of each of its steps: id, name,
    owner, group, and per step its capability, wafers and settings."""
    steps = tuple(
        (
            _ref(step.capability, lambda c: c.id),
            step.wafers,
            tuple(sorted(step.settings.items())),
        )
        for step in s.steps
    )
    owner = _ref(s.owner, lambda u: u.login)
    return _hex((s.id, s.name, owner, _ref(s.group, _name), steps))
