"""A matrix group's data: made before its clients start (each client's
mapping of n objects per transaction size, and the mapping they all share
for conflicts), and read back once they have stopped, as scale checks its
clients: every acknowledged write is there, nothing is there no client
wrote, and every read a client made saw its own last write.  Then the
group's data are removed (a database the user named keeps nothing)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from scenarios.matrix.objects import PObject, payload

#: The client number of the shared mapping's initial objects.
SHARED = -1
CONFLICTS = "conflicts"


@dataclasses.dataclass(frozen=True)
class Database:
    """A group's database: the *spec* client processes open (a served
    database's client spec, a FileStorage's ZConfig text), or the *source*
    a user named (--storage-uri, --storage-config), opened in this process
    as the suite opens every database a user names."""

    spec: str = ""
    source: Any = None

    def open(self, pool_size: int = 1, must_exist: bool = True) -> Any:
        """One ZODB.DB on it."""
        if self.source is not None:
            import ZODB

            return ZODB.DB(self.source.open(False), pool_size=pool_size)
        from scenarios.load.target import open_target

        return open_target(self.spec, pool_size=pool_size, must_exist=must_exist)


def refuse_data(database: Database, name: str) -> None:
    """StorageError unless the database *target* names holds no data (a
    root with nothing in it, or nothing yet): the matrix writes only to a
    database of its own, never into a user's data."""
    import ZODB

    from storages import StorageError
    from storages.errors import NoDatabase
    from storages.named import open_one_line

    if database.source is None:
        db = database.open(must_exist=False)
    else:
        # Read-only, as every check before the work: a refused run leaves
        # no lock, index or .tmp beside the user's data.  A database not
        # made yet holds nothing; one with no read-only mode (a server's)
        # creates nothing here.
        source = database.source
        opener = source.read_only_opener()
        if opener is None and source.is_new():
            return
        if opener is None:
            db = database.open()
        else:
            try:
                db = ZODB.DB(open_one_line(opener, source))
            except NoDatabase:
                return
    try:
        conn = db.open()
        try:
            keys = list(conn.root().keys())
        finally:
            conn.close()
    finally:
        db.close()
    if keys:
        raise StorageError(
            f"{name}: the database holds data (its root has {len(keys)} "
            f"{'key' if len(keys) == 1 else 'keys'}); the matrix writes only to "
            "a new or empty database"
        )


def populate(
    database: Database, key: str, concurrency: int, sizes: Sequence[int]
) -> None:
    """root[key][n][c]: client c's n objects; root[key][n]["conflicts"]: n
    objects every client updates.  Every object starts with attr 0."""
    import transaction
    from persistent.mapping import PersistentMapping

    db = database.open(must_exist=False)
    try:
        tm = transaction.TransactionManager(explicit=True)
        conn = db.open(tm)
        tm.begin()
        top = PersistentMapping()
        for n in sizes:
            by_client = PersistentMapping()
            for c in range(concurrency):
                by_client[c] = PersistentMapping(
                    {k: PObject(payload(c, k)) for k in range(n)}
                )
            by_client[CONFLICTS] = PersistentMapping(
                {k: PObject(payload(SHARED, k)) for k in range(n)}
            )
            top[n] = by_client
        conn.root()[key] = top
        tm.commit()
        conn.close()
    finally:
        db.close()


def check(
    database: Database,
    key: str,
    sizes: Sequence[int],
    clients: Sequence[dict[str, Any]],
    remove: bool = True,
) -> list[str]:
    """The problems found reading back what *clients* (each client's
    result: "client", "own", "shared", "problems") were acknowledged; the
    group's data removed after (*remove*)."""
    import transaction

    problems = [
        f"client {c['client']}: {p}" for c in clients for p in c.get("problems", [])
    ]
    db = database.open()
    try:
        tm = transaction.TransactionManager(explicit=True)
        conn = db.open(tm)
        tm.begin()
        top = conn.root().get(key)
        if top is None:
            return [*problems, "the group's data are gone"]
        for n in sizes:
            by_client = top[n]
            for c in clients:
                number, want = c["client"], c["own"].get(n, 0)
                m = by_client[number]
                wrong = sum(obj.attr != want for obj in m.values())
                if len(m) != n or wrong:
                    problems.append(
                        f"client {number}, {n} objects: {len(m)} objects read "
                        f"back, {wrong} without its last acknowledged write"
                    )
            problems += _shared(by_client[CONFLICTS], n, clients)
        tm.abort()
        if remove:
            tm.begin()
            del conn.root()[key]
            tm.commit()
        conn.close()
    finally:
        db.close()
    return problems


def _shared(m: Any, n: int, clients: Sequence[dict[str, Any]]) -> list[str]:
    """Each shared object holds a value some client that writes it was
    acknowledged for (or its first, if none wrote it)."""
    out = []
    for k, obj in m.items():
        writers = [c for c in clients if n == 1 or k % 2 == c["client"] % 2]
        allowed = {s for c in writers for s in c["shared"].get(n, [])}
        if not allowed:
            allowed = {0}
        if obj.attr not in allowed:
            out.append(
                f"conflicts, {n} objects: object {k} holds {obj.attr}, which no "
                "client was acknowledged for"
            )
    if len(m) != n:
        out.append(f"conflicts, {n} objects: {len(m)} objects read back")
    return out
