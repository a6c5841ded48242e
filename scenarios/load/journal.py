"""The journal of what users committed, and the check of the stored data
against it after a run.

Users record each write's receipt; drain() and absorb() carry entries
between processes (locust workers to their master, zeoloop's children to
the parent) as plain lists; verify() reads the data through a fresh client.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Mapping
from typing import Any

from scenarios.load.session import fab_of, short_connection
from scenarios.load.target import describe
from vfab import operations
from vfab.model import VirtualFab


class Journal:
    """What the users of this process (or, on a locust master, of all
    workers) reported committing.  Thread-safe; drain() and absorb() move
    entries between processes as plain lists."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.created: list[operations.Created] = []
        self.repriced: list[operations.Repriced] = []
        self._unsent = 0, 0

    def record(self, receipt: Any) -> None:
        with self._lock:
            if isinstance(receipt, operations.Created):
                self.created.append(receipt)
            elif isinstance(receipt, operations.Repriced):
                self.repriced.append(receipt)

    def drain(self) -> dict[str, list[list[Any]]]:
        """Entries recorded since the last drain, as JSON-able lists."""
        with self._lock:
            c0, r0 = self._unsent
            out = {
                "created": [dataclasses.astuple(e) for e in self.created[c0:]],
                "repriced": [dataclasses.astuple(e) for e in self.repriced[r0:]],
            }
            self._unsent = len(self.created), len(self.repriced)
        return {k: [list(v) for v in vs] for k, vs in out.items()}

    def absorb(self, data: Mapping[str, Any]) -> None:
        """Add entries another process drained."""
        with self._lock:
            self.created += [operations.Created(*e) for e in data.get("created", ())]
            self.repriced += [operations.Repriced(*e) for e in data.get("repriced", ())]

    def __len__(self) -> int:
        return len(self.created) + len(self.repriced)


def verify(target: str | tuple[str, int], journal: Journal) -> operations.CheckReport:
    """Check the stored data against the journal through a fresh client of
    the target (a client spec, or a ZEO (host, port))."""
    with short_connection(target) as connection:
        where = target if isinstance(target, str) else f"{target[0]}:{target[1]}"
        fab = fab_of(connection, describe(where))
        _prefetch(connection, fab, journal)
        return operations.check(fab, journal.created, journal.repriced)


def _prefetch(connection: Any, fab: VirtualFab, journal: Journal) -> None:
    """Ask the server for what the check will read, all at once: the cold
    client would otherwise wait one round trip per object (about 1 ms each
    here, and a long run creates thousands of sequences of 10-20 steps)."""
    capabilities = list(fab.library.capabilities.values())
    connection.prefetch(capabilities)
    sequences = [fab.sequences.get(c.sequence_id) for c in journal.created]
    sequences = [s for s in sequences if s is not None]
    connection.prefetch(sequences)
    connection.prefetch([step for s in sequences for step in s.steps])
