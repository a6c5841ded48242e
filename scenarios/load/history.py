"""The history of a concurrent run: every transaction a simulated user
attempted, with its outcome, its place in real time and in the storage's
commit order, and what it read and wrote (format version HISTORY_VERSION,
written down in docs/history-format.md).

An Event is one attempt (an operation retried after a conflict is several
events): which client and its attempt number, the operation, the outcome,
its start and end on the run's shared clock (scenarios.load.clock), the
snapshot it read at (the id of the last transaction its view holds), the
id of the transaction that committed it, and its accesses.  An Access is
``[kind, key, revision, value, digest]``, ``1`` appended for a read named
with readCurrent: a capability's price ("price", the capability id, value
in cents), a lab's wafer stock ("stock", the lab's name), a sequence
("sequence", its id, revision 1, value [owner, group, steps]), or the sum
of a stock audit ("stock total", key "*"); the digest covers the whole
object (vfab.digests).

A Session record says, per client, which clock its times are on, which
storage it talked to and whether that storage promises real-time order
(scenarios.load.promises), and the run token its transactions' notes
carry.

Outcomes, as the application was told:

- ``ok``: committed and acknowledged (reads: the transaction was aborted
  after reading, as read-only work is);
- ``failed``: the operation raised before its commit, or its commit
  failed at or before tpc_vote: none of its writes may appear;
- ``unknown``: the commit failed after every data manager voted (inside
  tpc_finish), or the connection was lost there, or the client was killed
  inside it: its writes may or may not appear.

A write's attempt is first recorded as ``pending`` just before its commit,
then again with its outcome; settle() keeps the last record of each
attempt, and a pending one with no outcome (its client was killed inside
the commit) becomes unknown.

Histories move between processes as JSON-able lists (History.drain and
absorb: zeoloop's children, locust's workers, which send theirs with every
stats report) or as JSON-lines files (FileHistory: scale's clients, every
line flushed as it is made, so it survives the client being killed);
``--history FILE`` keeps the merged history (write_history).
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, ClassVar, NamedTuple, Protocol

from scenarios.load.clock import Clock
from vfab import codec, operations

#: The version of the format (docs/history-format.md): 1 had no times,
#: snapshots, digests or session records; 2 has them.
HISTORY_VERSION = 2

#: The outcomes of an attempt, in the order reports list them.
OUTCOMES = ("ok", "failed", "unknown")


class Access(NamedTuple):
    """One object an attempt read or wrote (see the module docstring)."""

    kind: str
    key: Any
    revision: int
    value: Any
    digest: str = ""
    #: a read named with readCurrent (its transaction's commit checks it)
    current: bool = False

    def to_json(self) -> list[Any]:
        out = [self.kind, self.key, self.revision, _plain(self.value), self.digest]
        return out + [1] if self.current else out

    @classmethod
    def from_json(cls, data: list[Any]) -> Access:
        kind, key, revision, value = data[:4]
        digest = str(data[4]) if len(data) > 4 and data[4] else ""
        current = bool(data[5]) if len(data) > 5 else False
        return cls(str(kind), _key(key), int(revision), _value(value), digest, current)


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _key(v: Any) -> Any:
    return v if isinstance(v, (int, str)) else str(v)


def _value(x: Any) -> Any:
    # JSON turns a sequence's [owner, group, steps] tuple into a list.
    return tuple(x) if isinstance(x, list) else x


@dataclasses.dataclass(frozen=True)
class Event(codec.Json):
    """One transaction attempt of one client (see the module docstring)."""

    #: The format's order (docs/history-format.md), not the fields'.
    JSON_ORDER: ClassVar = tuple(
        "client n op outcome error tid snapshot start end".split()
    )

    client: str
    n: int
    op: str
    outcome: str
    error: str | None
    #: the committing transaction's id (16 hex digits) when ok and written
    tid: str | None
    reads: tuple[Access, ...]
    writes: tuple[Access, ...]
    #: seconds on the client's clock (its Session record says which): just
    #: before the transaction began, and just after it ended
    start: float | None = None
    end: float | None = None
    #: the id of the last transaction the attempt's view holds (16 hex)
    snapshot: str | None = None

    @property
    def name(self) -> str:
        """How reports name the attempt: client#n (operation)."""
        return f"{self.client}#{self.n} ({self.op})"


@dataclasses.dataclass(frozen=True)
class Session(codec.Json):
    """What one client says once about all its events: its clock, the
    storage it talked to, whether that storage promises that a transaction
    sees every commit acknowledged before it began (and why), and the run
    token in its transactions' notes (scenarios.load.session.note)."""

    client: str = dataclasses.field(metadata={codec.KEY: "session"})
    clock: Clock
    storage: str
    realtime: bool
    why: str
    run: str = ""

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Session:
        # Not codec.build: a line written before the clock, the storage
        # and the promise were recorded still reads, with empty ones.
        return cls(
            client=str(data["session"]),
            clock=Clock.from_json(data.get("clock") or {}),
            storage=str(data.get("storage", "")),
            realtime=bool(data.get("realtime", False)),
            why=str(data.get("why", "")),
            run=str(data.get("run", "")),
        )


def accesses(receipt: Any) -> tuple[tuple[Access, ...], tuple[Access, ...]]:
    """(reads, writes) of an operation's receipt; ((), ()) for operations
    whose reads the checker does not use (walks of the library)."""
    o = operations
    if isinstance(receipt, o.Created):
        value = (receipt.owner, receipt.group, receipt.steps)
        return (), (Access("sequence", receipt.sequence_id, 1, value, receipt.digest),)
    if isinstance(receipt, o.Repriced):
        return _repriced(receipt)
    if isinstance(receipt, o.Looked):
        return (_looked(receipt),), ()
    if isinstance(receipt, o.Transferred):
        pairs = receipt.digests or (("", ""),) * len(receipt.labs)
        reads = tuple(
            Access("stock", lab, rr, rs, d)
            for (lab, rr, rs, _, _), (d, _) in zip(receipt.labs, pairs, strict=True)
        )
        writes = tuple(
            Access("stock", lab, nr, ns, d)
            for (lab, _, _, nr, ns), (_, d) in zip(receipt.labs, pairs, strict=True)
        )
        return reads, writes
    if isinstance(receipt, o.Audited):
        each = receipt.digests or ("",) * len(receipt.labs)
        reads = tuple(
            Access("stock", lab, rev, stock, d)
            for (lab, rev, stock), d in zip(receipt.labs, each, strict=True)
        )
        return (*reads, Access("stock total", "*", 0, receipt.total)), ()
    if isinstance(receipt, o.Matched):
        reads, writes = _repriced(receipt.change)
        return (*reads, _looked(receipt.rival)._replace(current=True)), writes
    if isinstance(receipt, o.RepricedPair):
        (r1,), (w1,) = _repriced(receipt.first)
        (r2,), (w2,) = _repriced(receipt.second)
        return (r1, r2), (w1, w2)
    if isinstance(receipt, o.Compared):
        return (_looked(receipt.first), _looked(receipt.second)), ()
    if isinstance(receipt, o.SequenceRead):
        read = Access("sequence", receipt.sequence_id, 1, None, receipt.digest)
        return (read,), ()
    return (), ()


def _repriced(r: Any) -> tuple[tuple[Access, ...], tuple[Access, ...]]:
    cid = r.capability_id
    return (
        (Access("price", cid, r.read_revision, r.read_cents, r.read_digest),),
        (Access("price", cid, r.revision, r.cents, r.digest),),
    )


def _looked(r: Any) -> Access:
    return Access("price", r.capability_id, r.revision, r.cents, r.digest)


def settle(events: Iterable[Event]) -> list[Event]:
    """One event per attempt: its outcome, or unknown where only its
    pending record is there."""
    last: dict[tuple[str, int], Event] = {}
    for e in events:
        if e.outcome == "pending":
            e = dataclasses.replace(e, outcome="unknown", error="no outcome recorded")
            last.setdefault((e.client, e.n), e)
        else:
            last[e.client, e.n] = e
    return list(last.values())


class Recorder(Protocol):
    """Where a session records its events (History, FileHistory)."""

    def record(self, event: Event) -> None: ...

    def session(self, info: Session) -> None: ...


class NoHistory:
    """A Recorder that keeps nothing (--no-check: the load alone)."""

    def record(self, event: Event) -> None:
        pass

    def session(self, info: Session) -> None:
        pass


def _parse(data: dict[str, Any]) -> Event | Session:
    return Session.from_json(data) if "session" in data else Event.from_json(data)


class History:
    """The events of this process (or, on a locust master, of every
    worker), and the Session record of each client.  Thread-safe; drain()
    and absorb() move records between processes as plain lists."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.events: list[Event] = []
        self.sessions: dict[str, Session] = {}
        self._unsent = 0
        self._unsent_sessions: list[Session] = []

    def record(self, event: Event) -> None:
        with self._lock:
            self.events.append(event)

    def session(self, info: Session) -> None:
        with self._lock:
            self.sessions[info.client] = info
            self._unsent_sessions.append(info)

    def drain(self) -> list[dict[str, Any]]:
        """Records made since the last drain (sessions first), as JSON-able
        dicts."""
        with self._lock:
            out = [s.to_json() for s in self._unsent_sessions]
            out += [e.to_json() for e in self.events[self._unsent :]]
            self._unsent = len(self.events)
            self._unsent_sessions = []
        return out

    def absorb(self, data: Iterable[dict[str, Any]]) -> None:
        """Add records another process drained (or read_history read)."""
        records = [_parse(d) for d in data]
        with self._lock:
            for r in records:
                if isinstance(r, Session):
                    self.sessions[r.client] = r
                else:
                    self.events.append(r)

    def __len__(self) -> int:
        return len(self.events)

    def __iter__(self) -> Iterator[Event]:
        """The settled events (see settle())."""
        with self._lock:
            events = list(self.events)
        return iter(settle(events))


class FileHistory:
    """A Recorder appending each record to a file as one JSON line (read
    back with read_history).  Thread-safe: zeoloop's users are threads of
    one process.

    Every line is flushed to the kernel as it is made (a pending record
    before its commit starts, an outcome or a read as soon as it is known),
    so a client killed at any point leaves every attempt it finished, and
    an attempt it was inside as pending (unknown); the page cache outlives
    the process, so no fsync: a machine crash is not a client crash."""

    def __init__(self, path: str) -> None:
        self._lock = threading.Lock()
        self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115

    def record(self, event: Event) -> None:
        self._write(event.to_json())

    def session(self, info: Session) -> None:
        self._write(info.to_json())

    def _write(self, data: dict[str, Any]) -> None:
        line = json.dumps(data) + "\n"
        with self._lock:
            self._file.write(line)
            self._file.flush()

    def close(self) -> None:
        self._file.close()


def read_history(path: str | Path) -> list[dict[str, Any]]:
    """A FileHistory's records as History.absorb() takes them; a last line
    cut short by a kill is skipped."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return []
    out = []
    for line in lines:
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


@dataclasses.dataclass
class Part:
    """One checked point (or locust run) of a history file: its context
    (storage, clients, the check's JSON), its sessions and its events."""

    context: dict[str, Any]
    events: list[Event]
    sessions: dict[str, Session] = dataclasses.field(default_factory=dict)


#: A history file's parts, in order.
Parts = list[Part]


def write_history(path: Path, parts: Parts) -> None:
    """*parts* as JSON lines at *path*: for each part, a context line
    (``{"history": HISTORY_VERSION, "storage": ..., "clients": ...,
    "check": ...}``), its session records, then one line per event."""
    with open(path, "w", encoding="utf-8") as f:
        for part in parts:
            f.write(json.dumps({"history": HISTORY_VERSION, **part.context}) + "\n")
            for s in part.sessions.values():
                f.write(json.dumps(s.to_json()) + "\n")
            for e in part.events:
                f.write(json.dumps(e.to_json()) + "\n")


def read_parts(path: str | Path) -> Parts:
    """A --history file back as its parts (the checker's tests and tools
    read what write_history wrote)."""
    parts: Parts = []
    for data in read_history(path):
        if "history" in data:
            context = {k: v for k, v in data.items() if k != "history"}
            parts.append(Part(context, []))
        elif parts:
            record = _parse(data)
            if isinstance(record, Session):
                parts[-1].sessions[record.client] = record
            else:
                parts[-1].events.append(record)
    return parts
