"""The seal on every frame of a distributed scale run (scenarios.scale
.trust): an HMAC-SHA256 keyed by the run's token, over the frame's
direction, the worker's id, a sequence number and the frame.  Standard
library only, so that a test's peer can seal without importing locust
(which patches its process with gevent).
"""

from __future__ import annotations

import hashlib
import hmac
import struct

MAGIC = b"VFB1"
MAC_BYTES = 16
_HEAD = struct.Struct("!4sQ")  # magic, sequence number
TO_MASTER = b"worker->master"
TO_WORKER = b"master->worker"


class Seal:
    """Seals and opens the frames of one direction: MAGIC, a sequence
    number, then the MAC of (direction, peer id, number, payload).  A
    frame opens once: its number must pass the last one opened from (or
    for) the same peer, so a replayed frame is junk."""

    def __init__(self, token: str, direction: bytes) -> None:
        self.key = hashlib.sha256(b"vfab-scale\0" + token.encode()).digest()
        self.direction = direction
        self.sent = 0
        self.last: dict[bytes, int] = {}

    def _mac(self, peer: bytes, number: int, payload: bytes) -> bytes:
        message = b"\0".join((self.direction, peer, str(number).encode(), payload))
        return hmac.new(self.key, message, hashlib.sha256).digest()[:MAC_BYTES]

    def seal(self, peer: bytes, payload: bytes) -> bytes:
        self.sent += 1
        head = _HEAD.pack(MAGIC, self.sent)
        return head + self._mac(peer, self.sent, payload) + payload

    def open(self, peer: bytes, frame: bytes) -> bytes | None:
        """The payload of *frame*, or None when its seal does not hold."""
        if len(frame) < _HEAD.size + MAC_BYTES:
            return None
        magic, number = _HEAD.unpack_from(frame)
        mac = frame[_HEAD.size : _HEAD.size + MAC_BYTES]
        payload = frame[_HEAD.size + MAC_BYTES :]
        if magic != MAGIC or number <= self.last.get(peer, 0):
            return None
        if not hmac.compare_digest(mac, self._mac(peer, number, payload)):
            return None
        self.last[peer] = number
        return payload
