"""The objects the matrix writes: zodbshootout's PObject (a payload and an
attribute every update sets), importable by a ZEO server that resolves
their conflicts (scenarios.matrix.objects.PObject).

zodbshootout's updates set ``attr = 1`` on every object; here they set the
round's number, so the check can tell which write an object holds.  The
pickle is the same size and shape either way.
"""

from __future__ import annotations

from typing import Any

from persistent import Persistent

#: Bytes of payload per object: zodbshootout's default object size (300
#: bytes, estimated) less its class and state overhead.
PAYLOAD_BYTES = 240


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


def payload(client: int, key: int) -> bytes:
    """A deterministic payload of PAYLOAD_BYTES that differs per object
    (so no compression or deduplication makes it cheaper than real data)."""
    seed = f"{client}:{key}:".encode()
    return (seed * (PAYLOAD_BYTES // len(seed) + 1))[:PAYLOAD_BYTES]
