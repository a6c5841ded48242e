"""The run's token and the seal it keys on every frame between a locust
master and its workers (scenarios.clients.remote.trust; `vfab-bench scale
--workers` and the locustfile's --master/--worker alike): an HMAC-SHA256
over the frame's direction, the worker's id, a sequence number and the
frame.  No locust here, so that a test's peer can seal without importing
it (locust patches its process with gevent).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import struct

from scenarios.errors import ConfigError

MAGIC = b"VFB1"
MAC_BYTES = 16
_HEAD = struct.Struct("!4sQ")  # magic, sequence number
TO_MASTER = b"worker->master"
TO_WORKER = b"master->worker"
#: Where an operator gives a distributed run's token to its master and
#: workers (rather than on a command line other users of a host can read,
#: or as a locust option, which locust's master hands to every peer that
#: joins); the fewest characters a token given by hand may have.
TOKEN_ENV = "VFAB_WORKER_TOKEN"
MIN_TOKEN = 16


def new_token() -> str:
    """A distributed run's token: 128 random bits, as 22 URL-safe
    characters."""
    return secrets.token_urlsafe(16)


def check_token(token: str, where: str) -> str:
    """*token* if it can be one (printable ASCII, no spaces, at least
    MIN_TOKEN characters), else ConfigError naming *where* it came from."""
    token = token.strip()
    if not token:
        raise ConfigError(f"{where}: empty token")
    if not (token.isascii() and token.isprintable()) or " " in token:
        raise ConfigError(f"{where}: a token is printable ASCII without spaces")
    if len(token) < MIN_TOKEN:
        raise ConfigError(f"{where}: a token has at least {MIN_TOKEN} characters")
    return token


def token_from_env() -> str | None:
    """The operator's token (TOKEN_ENV), checked; None when not set."""
    value = os.environ.get(TOKEN_ENV)
    return None if value is None else check_token(value, TOKEN_ENV)


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
