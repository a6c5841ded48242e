"""Which worker a history record may come from: a worker's clients are
named with its prefix (node_of), and the master keeps a worker's records
for its own clients only (Senders), in the locustfile's distributed mode
and `vfab-bench scale --workers` alike."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scenarios.results.formatter import plural


def node_of(client_id: str) -> str:
    """How the history names a worker's users: w<last 6 of its id>.u<n>."""
    return f"w{client_id[-6:]}."


def client_of(record: Any) -> str:
    """The client a history record (an event, or a session record) is of."""
    if not isinstance(record, dict):
        return ""
    return str(record.get("session", record.get("client", "")))


class Senders:
    """Binds history records to the worker that sent them: a worker's
    clients are named with its prefix (node_of), so a record for a client
    of another prefix, or from a worker whose prefix another worker took
    first (ids are the peers' own: one may end like another's), is
    refused, and said once per worker (*say*), then counted."""

    def __init__(self, say: Callable[[str], None]) -> None:
        self.say = say
        #: node prefix -> the worker that first sent records under it
        self.owners: dict[str, str] = {}
        #: worker -> records refused
        self.refused: dict[str, int] = {}

    def own(self, worker: str, records: list[Any], name: str = "") -> list[Any]:
        """The records of *worker*'s own clients (*name*: how it is said)."""
        prefix = node_of(worker)
        owner = self.owners.setdefault(prefix, worker)
        kept = [r for r in records if client_of(r).startswith(prefix)]
        if owner != worker:
            kept = []
        refused = len(records) - len(kept)
        if refused:
            if worker not in self.refused:
                whose = (
                    f"clients named as {owner}'s ({prefix})"
                    if owner != worker
                    else f"clients of another worker (not {prefix})"
                )
                self.say(
                    f"refused {plural(refused, 'history record')} from "
                    f"{name or 'worker ' + worker}: {whose}; its records are "
                    "bound to it (counted, not said again)"
                )
            self.refused[worker] = self.refused.get(worker, 0) + refused
        return kept

    def words(self) -> str:
        """The refusals, for the check's line ('' when none)."""
        total = sum(self.refused.values())
        if not total:
            return ""
        return (
            f"{plural(total, 'history record')} refused from "
            f"{plural(len(self.refused), 'worker')}: for clients not theirs"
        )
