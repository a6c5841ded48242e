"""The objects the matrix writes: zodbshootout's PObject (a payload and an
attribute every update sets), importable by a ZEO server that resolves
their conflicts (scenarios.matrix.objects.PObject).

zodbshootout's updates set ``attr = 1`` on every object; here they set the
round's number, so the check can tell which write an object holds.  The
pickle is the same size and shape either way.
"""

from __future__ import annotations

import functools
import random
import string
from typing import Any

from persistent import Persistent

#: Bytes of payload per object: what zodbshootout 0.8's objects carry at
#: its default "object size" of 300.  It asks for 187 bytes (300 less its
#: estimate of the object's overhead) and appends chunks of its own source
#: text until there are at least that many: 1,194 to 1,634 bytes, median
#: 1,421, over 100 objects (zlib makes them 1.68x smaller).  Before
#: 2026-11-28 the matrix wrote 240 bytes (PAYLOAD_BYTES_BEFORE).
PAYLOAD_BYTES = 1420
#: The payload of a matrix file that does not say its own.
PAYLOAD_BYTES_BEFORE = 240
#: The letters of a payload: spaces among them, so that zlib shrinks it
#: about as much as zodbshootout's text (1.61x).
_LETTERS = string.ascii_lowercase + " " * 5


class PObject(Persistent):  # type: ignore[misc]
    """A payload and a value.  Conflicts resolve as zodbshootout's do: the
    committing state wins (the conflicts benchmark measures resolution,
    not retries)."""

    attr = 0

    def __init__(self, data: bytes, attr: int = 0) -> None:
        self.data = data
        self.attr = attr

    def _p_resolveConflict(self, old: Any, committed: Any, new: Any) -> Any:
        return new


@functools.cache
def payload(client: int, key: int) -> bytes:
    """A deterministic payload of PAYLOAD_BYTES that differs per object:
    pseudo-random letters and spaces, which compress as text does (a
    repeated pattern would make a zlib storage's writes cheaper than real
    data's).  Made once per object (250 µs), outside every clock."""
    letters = random.Random(f"{client}:{key}").choices(_LETTERS, k=PAYLOAD_BYTES)
    return "".join(letters).encode()
