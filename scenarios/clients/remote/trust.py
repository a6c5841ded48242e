"""Who a distributed run hears (`vfab-bench scale --workers`, the
locustfile's --master and --worker): the run's token, the seal on every
frame, and the shape of every message, checked before locust or the suite
reads it.

locust's master takes any peer that reaches its port (DESIGN.md, "Locust's
master and workers trust the network"): a client id and a message type are
all it asks, and a malformed frame kills its listener.  Here each run's
master makes a token (scenarios.clients.remote.seal.new_token(), or the operator's,
VFAB_WORKER_TOKEN) and shows it; its workers are given it.  The token
itself never travels: every frame either way carries an HMAC-SHA256 of the
frame, its direction, the worker's id and a sequence number, keyed by the
token (Seal).  A frame whose seal does not hold (no token, another run's, a
replay, a cut or altered frame, plain bytes) is dropped before locust's
code sees it, and so is a sealed one whose message is not of a type and
shape the program sends (its table of scenarios.clients.remote.shapes): each side
counts what it dropped and says so once (Junk).  So a peer that did not
join this run can neither join, nor send stats or history, nor break a
listener; an eavesdropper on the clients' network learns the messages
(they are not encrypted), not the token.

The guarded sockets (GuardedServer, GuardedClient) stand in for locust's
rpc.Server and rpc.Client with the same calls; Master and Worker are
locust's runners with them put in place of every socket they make,
reconnections included.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgpack
import zmq.error as zmqerr
import zmq.green as zmq
from locust import __version__
from locust.exception import RPCError, RPCSendError
from locust.rpc import Message
from locust.runners import (
    CONNECT_RETRY_COUNT,
    CONNECT_TIMEOUT,
    MasterRunner,
    WorkerRunner,
)
from locust.stats import RequestStats

from scenarios.clients.remote.seal import TO_MASTER, TO_WORKER, Seal
from scenarios.clients.remote.shapes import Shapes

Say = Callable[[str], None]


def decode(payload: bytes, shapes: Shapes, sender: str) -> tuple[Message | None, str]:
    """locust's Message from *payload* when it is one of *shapes*, from
    *sender*; else None and what is wrong with it (never an exception)."""
    try:
        value = msgpack.loads(payload, raw=False, strict_map_key=False)
    except Exception:  # msgpack raises several types on junk; all are junk
        return None, "not a msgpack value"
    if not (isinstance(value, (list, tuple)) and len(value) == 3):
        return None, "not a [type, data, sender] array"
    kind, data, node_id = value
    if not (isinstance(kind, str) and node_id == sender):
        return None, "not of its sender"
    shape = shapes.get(kind)
    if shape is None:
        return None, f"of an unknown type ({kind[:40]!r})"
    if not shape(data):
        return None, f"a malformed {kind[:40]!r} message"
    return Message(kind, data, node_id), ""


class Junk:
    """Frames one side dropped: counted, and said once (the first)."""

    def __init__(self, say: Say, side: str) -> None:
        self.say = say
        self.side = side
        self.count = 0
        #: a sealed message this side cannot read: its peer is broken
        self.broken: str | None = None
        #: told of it (a worker ends)
        self.on_broken: Callable[[str], None] | None = None
        #: told of each sealed message a worker sent that could not be read
        #: (its id): what that worker said did not all arrive
        self.on_garbled: Callable[[str], None] | None = None

    def fail(self, line: str) -> None:
        self.count += 1
        if self.broken is None:
            self.broken = line
            if self.on_broken is not None:
                self.on_broken(line)

    def __call__(self, why: str, peer: str) -> None:
        self.count += 1
        if self.count == 1:
            source = f" from {peer}" if peer else ""
            self.say(
                f"ignoring {why}{source}; every frame not sealed with this run's "
                f"token or not a message {self.side} sends is dropped "
                "(counted, not said again)"
            )

    def words(self) -> str:
        return "" if not self.count else f" ({self.count} frames ignored)"


def _peer_address(frame: Any) -> str:
    try:
        return str(frame.get("Peer-Address"))
    except (zmqerr.ZMQError, AttributeError, TypeError):
        return ""


class GuardedServer:
    """locust's rpc.Server, sealed and checked (the master's side)."""

    def __init__(self, inner: Any, seals: Seals, junk: Junk, shapes: Shapes) -> None:
        self.inner = inner
        self.socket = inner.socket
        self.seals = seals
        self.junk = junk
        self.shapes = shapes

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def send_to_client(self, msg: Message) -> None:
        peer = msg.node_id.encode()
        frame = self.seals.out.seal(peer, msg.serialize())
        try:
            self.socket.send_multipart([peer, frame])
        except zmqerr.ZMQError as e:
            raise RPCSendError("ZMQ sent failure") from e

    def send(self, msg: Message) -> None:
        self.send_to_client(msg)

    def recv_from_client(self) -> tuple[str, Message]:
        while True:
            try:
                frames = self.socket.recv_multipart(copy=False)
            except zmqerr.ZMQError as e:
                raise RPCError("ZMQ network broken") from e
            got = self._open(frames)
            if got is not None:
                return got

    def _open(self, frames: list[Any]) -> tuple[str, Message] | None:
        where = _peer_address(frames[-1]) if frames else ""
        if len(frames) != 2:
            self.junk(f"a frame of {len(frames)} parts", where)
            return None
        peer, frame = frames[0].bytes, frames[1].bytes
        try:
            sender = peer.decode("ascii")
        except UnicodeDecodeError:
            self.junk("a peer whose id is not text", where)
            return None
        payload = self.seals.into.open(peer, frame)
        if payload is None:
            self.junk("a frame not sealed with this run's token", where)
            return None
        msg, why = decode(payload, self.shapes, sender)
        if msg is None:
            self.junk(f"a sealed frame {why}", where)
            if self.junk.on_garbled is not None:
                self.junk.on_garbled(sender)
            return None
        return sender, msg

    def close(self, linger: Any = None) -> None:
        self.inner.close(linger=linger)


class GuardedClient:
    """locust's rpc.Client, sealed and checked (a worker's side)."""

    def __init__(
        self, inner: Any, identity: str, seals: Seals, junk: Junk, shapes: Shapes
    ) -> None:
        self.inner = inner
        self.socket = inner.socket
        self.identity = identity
        self.seals = seals
        self.junk = junk
        self.shapes = shapes

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def send(self, msg: Message) -> None:
        frame = self.seals.out.seal(self.identity.encode(), msg.serialize())
        try:
            self.socket.send(frame, zmq.NOBLOCK)
        except zmqerr.ZMQError as e:
            raise RPCSendError("ZMQ sent failure") from e

    def recv(self) -> Message:
        while True:
            try:
                frame = self.socket.recv(copy=False)
            except zmqerr.ZMQError as e:
                raise RPCError("ZMQ network broken") from e
            where = _peer_address(frame)
            payload = self.seals.into.open(self.identity.encode(), frame.bytes)
            if payload is None:
                self.junk("a frame not sealed with this run's token", where)
                continue
            msg, why = decode(payload, self.shapes, self.identity)
            if msg is None:
                # Sealed: its master's, but of another version or broken.
                self.junk.fail(f"the master sent {why}: does it run this version?")
                continue
            return msg

    def close(self, linger: Any = None) -> None:
        self.inner.close(linger=linger)


class Seals:
    """A side's two seals: what it sends, what it opens."""

    def __init__(self, token: str, out: bytes, into: bytes) -> None:
        self.out = Seal(token, out)
        self.into = Seal(token, into)


class Master(MasterRunner):
    """locust's MasterRunner hearing only this run's sealed workers, and of
    them only messages of *shapes* (what its workers send)."""

    def __init__(
        self,
        environment: Any,
        host: str,
        port: int,
        token: str,
        junk: Junk,
        shapes: Shapes,
    ) -> None:
        self._seals = Seals(token, TO_WORKER, TO_MASTER)
        self.junk = junk
        self.shapes = shapes
        super().__init__(environment, host, port)

    @property  # type: ignore[override]
    def server(self) -> GuardedServer:
        return self._server

    @server.setter
    def server(self, inner: Any) -> None:  # each reconnection's too
        self._server = GuardedServer(inner, self._seals, self.junk, self.shapes)


class Worker(WorkerRunner):
    """locust's WorkerRunner hearing only its sealed master, and of it only
    messages of *shapes* (what its master sends)."""

    def __init__(
        self,
        environment: Any,
        host: str,
        port: int,
        token: str,
        junk: Junk,
        shapes: Shapes,
    ) -> None:
        self._seals = Seals(token, TO_MASTER, TO_WORKER)
        self.junk = junk
        self.shapes = shapes
        super().__init__(environment, host, port)

    def connect_to_master(self) -> None:
        """locust's, but a stop signal while it waits is raised, not turned
        into sys.exit(1): the command's edge gives its status (128+N)."""
        self.retry += 1
        self.client.send(Message("client_ready", __version__, self.client_id))
        if not self.connection_event.wait(timeout=CONNECT_TIMEOUT):
            if self.retry > CONNECT_RETRY_COUNT:
                raise ConnectionError()
            self.connect_to_master()
            return
        self.connected = True

    @property  # type: ignore[override]
    def client(self) -> GuardedClient:
        return self._client

    @client.setter
    def client(self, inner: Any) -> None:
        self._client = GuardedClient(
            inner, self.client_id, self._seals, self.junk, self.shapes
        )


def master_runner(
    environment: Any, host: str, port: int, token: str, junk: Junk, shapes: Shapes
) -> Master:
    """environment.create_master_runner, guarded: *shapes* are what its
    workers send."""
    runner: Master = environment._create_runner(Master, host, port, token, junk, shapes)
    return runner


def worker_runner(
    environment: Any, host: str, port: int, token: str, junk: Junk, shapes: Shapes
) -> Worker:
    """environment.create_worker_runner, guarded: *shapes* are what its
    master sends (it waits for the master's answer: bound it with
    gevent.Timeout)."""
    # locust's own: a worker keeps no response times cache
    environment.stats = RequestStats(use_response_times_cache=False)
    runner: Worker = environment._create_runner(Worker, host, port, token, junk, shapes)
    return runner
