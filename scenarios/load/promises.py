"""What each storage promises its clients, stated once, and how a client
learns which applies to the database it opened.

Every ZODB storage promises snapshot isolation with first-committer-wins:
a transaction reads one snapshot (MVCC: loadBefore its start), and its
commit fails with a ConflictError when another transaction committed a
new revision of an object it writes after its snapshot.  A read named with
Connection.readCurrent() is checked at commit the same way, which makes
the reads it names serializable.  A client session sees its own commits.

Whether a transaction sees every commit acknowledged to *other* clients
before it began (real-time order, "strict") depends on the storage:

- ZEO with ``server_sync`` on: its begin makes a round trip to the server,
  which has sent every invalidation queued before it answers;
- ZEO with ``server_sync`` off (ZEO's default): a new transaction starts
  from the invalidations that have arrived; others may still be on the
  way, so a read may be stale for a moment (allowed, counted apart);
- RelStorage: each transaction polls the database when it begins;
- a storage in this process (FileStorage, MappingStorage, BDB): a commit
  is visible to every connection when tpc_finish returns.

The checker (scenarios.checker.judge) calls a violation only what the storage
promised; docs/consistency.md has the table.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ZODB.utils import u64

#: The isolation level every ZODB storage promises.
BASE_LEVEL = "snapshot isolation"


@dataclasses.dataclass(frozen=True)
class Promise:
    """One storage's promise beyond snapshot isolation: real-time order
    (*realtime*), and why (or why not)."""

    storage: str
    realtime: bool
    why: str


def _unwrapped(storage: Any) -> Any:
    """The storage under wrappers that forward everything (zc.zlibstorage)."""
    seen = 0
    while seen < 5 and type(storage).__name__ == "ZlibStorage":
        storage = getattr(storage, "base", storage)
        seen += 1
    return storage


def promise_of(db: Any) -> Promise:
    """The Promise of the storage under ZODB.DB *db*."""
    storage = _unwrapped(db.storage)
    name = type(storage).__name__
    # By the classes it is made of: the suite's own ZEO client is a
    # subclass (storages.zeo.factory.client_class).
    modules = [c.__module__ for c in type(storage).__mro__]
    module = next((m for m in modules if m.startswith(("ZEO.", "relstorage."))), "")
    if module.startswith("ZEO."):
        if getattr(storage, "server_sync", False):
            return Promise(
                name,
                True,
                "ZEO with server_sync: each transaction's begin waits for the "
                "server's invalidations",
            )
        return Promise(
            name,
            False,
            "ZEO without server_sync: a transaction may begin before the "
            "invalidations of commits acknowledged to other clients arrive "
            "(stale reads allowed)",
        )
    if module.startswith("relstorage."):
        return Promise(
            name, True, "RelStorage polls the database when each transaction begins"
        )
    return Promise(
        name,
        True,
        f"{name} in this process: a commit is visible to every connection when "
        "it returns",
    )


def snapshot_of(connection: Any) -> str | None:
    """The id (16 hex digits) of the last transaction the view of
    *connection*'s current transaction holds, or None where the storage
    does not say: MVCCAdapterInstance reads before ``_start`` (its last
    transaction + 1), RelStorage's instance at ``highest_visible_tid``."""
    storage = getattr(connection, "_storage", None)
    start = getattr(storage, "_start", None)
    if isinstance(start, bytes) and len(start) == 8:
        return f"{u64(start) - 1:016x}"
    visible = getattr(storage, "highest_visible_tid", None)
    if isinstance(visible, int) and visible > 0:
        return f"{visible:016x}"
    return None
