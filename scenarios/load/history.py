"""The history of a concurrent run: every transaction a simulated user
attempted, with its outcome and what it read and wrote.

An Event is one attempt (an operation retried after a conflict is several
events): which client and its attempt number, the operation, the outcome,
and its accesses.  An access is ``[kind, key, revision, value]``: a
capability's price (kind "price", key the capability id, value in cents),
a lab's wafer stock ("stock", the lab's name), a sequence ("sequence", its
id, revision 1, value [owner, group, steps]), or the sum of a stock audit
("stock total", key "*").

Outcomes, as the application was told:

- ``ok``: committed and acknowledged (reads: the transaction was aborted
  after reading, as read-only work is);
- ``failed``: the operation or its commit raised and the transaction was
  aborted: none of its writes may appear;
- ``unknown``: the connection to the server was lost during the commit: its
  writes may or may not appear.

A write's attempt is first recorded as ``pending`` just before its commit,
then again with its outcome; settle() keeps the last record of each
attempt, and a pending one with no outcome (its client was killed inside
the commit) becomes unknown.

Histories move between processes as JSON-able lists (History.drain and
absorb: zeoloop's children, locust's workers) or as JSON-lines files
(FileHistory: scale's clients, whose lines survive the client being
killed); ``--history FILE`` keeps the merged history (write_history).
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Protocol

from vfab import operations

#: The outcomes of an attempt, in the order reports list them.
OUTCOMES = ("ok", "failed", "unknown")

#: Errors that mean the connection went away, so the commit may or may not
#: have happened.  Named, not imported: the checker never needs ZEO or the
#: database drivers to be importable.
_DISCONNECTED = {
    "ClientDisconnected",
    "DisconnectedError",
    "ConnectionError",
    "BrokenPipeError",
}
#: The drivers' error types that mean a lost connection only when their
#: message says so (SQLite's "database is locked" is an OperationalError too,
#: and a plain failure).
_MAYBE_DISCONNECTED = {"OperationalError", "InterfaceError"}
_LOST_WORDS = ("closed", "lost", "terminat", "connect", "gone away", "broken pipe")


def outcome_of(error: BaseException | None) -> str:
    """The outcome of an attempt whose commit raised *error* (None: it
    committed): unknown for a lost connection, failed for anything else."""
    if error is None:
        return "ok"
    names = {cls.__name__ for cls in type(error).__mro__}
    if names & _DISCONNECTED:
        return "unknown"
    if names & _MAYBE_DISCONNECTED:
        text = str(error).lower()
        if any(word in text for word in _LOST_WORDS):
            return "unknown"
    return "failed"


@dataclasses.dataclass(frozen=True)
class Event:
    """One transaction attempt of one client (see the module docstring)."""

    client: str
    n: int
    op: str
    outcome: str
    error: str | None
    #: the committing transaction's id (16 hex digits) when ok and written
    tid: str | None
    reads: tuple[tuple[str, Any, int, Any], ...]
    writes: tuple[tuple[str, Any, int, Any], ...]

    @property
    def name(self) -> str:
        """How reports name the attempt: client#n (operation)."""
        return f"{self.client}#{self.n} ({self.op})"

    def to_json(self) -> dict[str, Any]:
        return {
            "client": self.client,
            "n": self.n,
            "op": self.op,
            "outcome": self.outcome,
            "error": self.error,
            "tid": self.tid,
            "reads": [list(a) for a in self.reads],
            "writes": [list(a) for a in self.writes],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Event:
        def accesses(key: str) -> tuple[tuple[str, Any, int, Any], ...]:
            return tuple(
                (str(k), _key(v), int(r), _value(x)) for k, v, r, x in data[key]
            )

        return cls(
            client=str(data["client"]),
            n=int(data["n"]),
            op=str(data["op"]),
            outcome=str(data["outcome"]),
            error=data["error"],
            tid=data["tid"],
            reads=accesses("reads"),
            writes=accesses("writes"),
        )


def _key(v: Any) -> Any:
    return v if isinstance(v, (int, str)) else str(v)


def _value(x: Any) -> Any:
    # JSON turns a sequence's [owner, group, steps] tuple into a list.
    return tuple(x) if isinstance(x, list) else x


def accesses(
    receipt: Any,
) -> tuple[
    tuple[tuple[str, Any, int, Any], ...], tuple[tuple[str, Any, int, Any], ...]
]:
    """(reads, writes) of an operation's receipt; ((), ()) for operations
    whose reads the checker does not use (walks of the library)."""
    o = operations
    if isinstance(receipt, o.Created):
        value = (receipt.owner, receipt.group, receipt.steps)
        return (), (("sequence", receipt.sequence_id, 1, value),)
    if isinstance(receipt, o.Repriced):
        cid = receipt.capability_id
        return (
            (("price", cid, receipt.read_revision, receipt.read_cents),),
            (("price", cid, receipt.revision, receipt.cents),),
        )
    if isinstance(receipt, o.Looked):
        return (("price", receipt.capability_id, receipt.revision, receipt.cents),), ()
    if isinstance(receipt, o.Transferred):
        reads = tuple(("stock", lab, rr, rs) for lab, rr, rs, _, _ in receipt.labs)
        writes = tuple(("stock", lab, nr, ns) for lab, _, _, nr, ns in receipt.labs)
        return reads, writes
    if isinstance(receipt, o.Audited):
        reads = tuple(("stock", lab, rev, stock) for lab, rev, stock in receipt.labs)
        return (*reads, ("stock total", "*", 0, receipt.total)), ()
    return (), ()


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


class NoHistory:
    """A Recorder that keeps nothing (--no-check: the load alone)."""

    def record(self, event: Event) -> None:
        pass


class History:
    """The events of this process (or, on a locust master, of every
    worker).  Thread-safe; drain() and absorb() move events between
    processes as plain lists."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.events: list[Event] = []
        self._unsent = 0

    def record(self, event: Event) -> None:
        with self._lock:
            self.events.append(event)

    def drain(self) -> list[dict[str, Any]]:
        """Events recorded since the last drain, as JSON-able dicts."""
        with self._lock:
            out = [e.to_json() for e in self.events[self._unsent :]]
            self._unsent = len(self.events)
        return out

    def absorb(self, data: Iterable[dict[str, Any]]) -> None:
        """Add events another process drained."""
        events = [Event.from_json(d) for d in data]
        with self._lock:
            self.events += events

    def __len__(self) -> int:
        return len(self.events)

    def __iter__(self) -> Iterator[Event]:
        """The settled events (see settle())."""
        with self._lock:
            events = list(self.events)
        return iter(settle(events))


class FileHistory:
    """A Recorder appending each event to a file as one JSON line, flushed
    at once (read back with read_history).  Thread-safe: zeoloop's users
    are threads of one process."""

    def __init__(self, path: str) -> None:
        self._lock = threading.Lock()
        self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115

    def record(self, event: Event) -> None:
        line = json.dumps(event.to_json()) + "\n"
        with self._lock:
            self._file.write(line)
            self._file.flush()

    def close(self) -> None:
        self._file.close()


def read_history(path: str | Path) -> list[dict[str, Any]]:
    """A FileHistory's events as History.absorb() takes them; a last line
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


#: A history file's parts: per point (or run), its context and its events.
Parts = list[tuple[dict[str, Any], list[Event]]]


def write_history(path: Path, parts: Parts) -> None:
    """*parts* as JSON lines at *path*: for each part, a context line
    (``{"history": 1, "storage": ..., "clients": ..., "check": ...}``) and
    then one line per event."""
    with open(path, "w", encoding="utf-8") as f:
        for context, events in parts:
            f.write(json.dumps({"history": 1, **context}) + "\n")
            for e in events:
                f.write(json.dumps(e.to_json()) + "\n")
