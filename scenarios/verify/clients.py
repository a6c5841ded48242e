"""The clients of the consistency scenarios: each its own ZODB.DB, transaction
manager and connection on one client spec, opened in one process as
separate processes would open them, and closed (aborted first) on every
path; the scenarios' objects live under root[AREA_KEY][scenario name].
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Iterator
from typing import Any

#: The root key the scenarios write under, one PersistentMapping per
#: scenario name: never the vfab data set, so each scenario is small and
#: independent of the others and of a populated database.
AREA_KEY = "vfab-verify"

#: Seconds a client open before another's commit may take to see it.
CATCH_UP_S = 10.0

#: A suffix of every scenario's key under root[AREA_KEY] (tagged()): a
#: run's own, where others may run scenarios on the same database at once
#: (verify --target), so that they never meet.
_TAG = [""]


@contextlib.contextmanager
def tagged(tag: str) -> Iterator[None]:
    """Scenario areas keyed "<name> <tag>" inside the block."""
    _TAG.append(f" {tag}" if tag else "")
    try:
        yield
    finally:
        _TAG.pop()


def key(name: str) -> str:
    """The key of scenario *name*'s area under root[AREA_KEY]."""
    return name + _TAG[-1]


@dataclasses.dataclass
class Client:
    """One client: its own ZODB.DB, transaction manager and connection."""

    db: Any
    tm: Any
    conn: Any

    def area(self, name: str, after: bytes | None = None) -> Any:
        """A new transaction, and scenario *name*'s mapping in it; with
        *after* (a tid), once this client has seen that transaction.

        ZODB does not promise that a client sees another's commit as soon
        as it returns: a ZEO client learns of it from the server's
        invalidation message, asynchronously (ClientStorage.sync() does
        nothing), while RelStorage polls at tm.begin().  So a client that
        was open before another's commit waits for its tid, or the
        scenario's order would depend on timing."""
        deadline = time.monotonic() + CATCH_UP_S
        wanted = after or b""
        while True:
            # Checked before begin: begin applies what has arrived by then.
            seen = self.db.lastTransaction() >= wanted
            self.tm.begin()  # RelStorage polls (and catches up) here
            if seen:
                return self.conn.root()[AREA_KEY][key(name)]
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"a client did not see transaction 0x{wanted.hex()} "
                    f"{CATCH_UP_S:.0f} s after its commit returned"
                )
            time.sleep(0.01)

    def close(self) -> None:
        # Abort first: closing a connection with changes pending raises.
        try:
            self.tm.abort()
        finally:
            self.conn.close()


@contextlib.contextmanager
def clients(spec: str) -> Iterator[Callable[[], Client]]:
    """A function that opens one more client on *spec*; every client it
    opened is aborted and closed, its DB too, when the block ends."""
    import transaction

    from scenarios.load.target import open_target

    with contextlib.ExitStack() as stack:

        def open_client() -> Client:
            db = open_target(spec, pool_size=1)
            stack.callback(db.close)  # after the connection's close below
            tm = transaction.TransactionManager()
            client = Client(db, tm, db.open(transaction_manager=tm))
            stack.callback(client.close)
            return client

        yield open_client


def prepare(client: Client, name: str, objects: dict[str, Any]) -> bytes:
    """Commit *objects* as root[AREA_KEY][name], replacing what was there;
    the transaction's tid.  Retried after a conflict on root[AREA_KEY]
    (another run preparing its own area at once), a few times."""
    from persistent.mapping import PersistentMapping
    from ZODB.POSException import ConflictError

    for attempt in range(PREPARE_TRIES):
        client.tm.begin()
        root = client.conn.root()
        if AREA_KEY not in root:
            root[AREA_KEY] = PersistentMapping()
        area = root[AREA_KEY][key(name)] = PersistentMapping(objects)
        try:
            client.tm.commit()
        except ConflictError:
            client.tm.abort()
            if attempt == PREPARE_TRIES - 1:
                raise
            time.sleep(0.05 * (attempt + 1))
            continue
        return bytes(area._p_serial)
    raise AssertionError("unreachable")  # pragma: no cover


#: Attempts of prepare() (and remove_areas()) when others prepare at once.
PREPARE_TRIES = 5


def mapping(**items: Any) -> Any:
    from persistent.mapping import PersistentMapping

    return PersistentMapping(items)


def path(name: str, *keys: str) -> str:
    return f"root[{AREA_KEY!r}][{key(name)!r}]" + "".join(f"[{k!r}]" for k in keys)


def remove_areas(spec: str, names: list[str]) -> None:
    """Remove the areas of scenarios *names* (this tag's) from the
    database: a run on a shared target leaves nothing of its own."""
    from ZODB.POSException import ConflictError

    with clients(spec) as open_client:
        client = open_client()
        for attempt in range(PREPARE_TRIES):
            client.tm.begin()
            area = client.conn.root().get(AREA_KEY)
            if area is None:
                return
            for name in names:
                area.pop(key(name), None)
            try:
                client.tm.commit()
                return
            except ConflictError:
                client.tm.abort()
                if attempt == PREPARE_TRIES - 1:
                    raise
                time.sleep(0.05 * (attempt + 1))


def error_line(e: BaseException) -> str:
    """An exception as one line: its type and its message's first line."""
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0]}" if text else type(e).__name__
