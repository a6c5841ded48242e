"""How a scale point's clients run concurrently: zodbshootout's three kinds.

- processes: one client per process (the default, and the release's
  curve): what a server sees from application processes of one worker
  each;
- threads: --clients-per-process clients as threads of one process, one
  ZODB.DB among them (each its own connection and transaction manager);
- greenlets: the same as gevent greenlets, the process patched by gevent
  before it imports ZODB: the shape of a gevent web application (200
  greenlets in 4 processes).

A greenlet runs only while the others wait on a socket gevent patched.
ZEO's client does its I/O through asyncio on patched sockets and runs
cooperatively (one ZODB.DB per process: two ZEO clients in one gevent
process fail, docs/DESIGN); so do the pure-Python RelStorage drivers,
pg8000 and PyMySQL.  Measured here under gevent (10 greenlets, 4 s each):
mysqlclient and sqlite3 block in C, so the greenlets ran one after another
(40 s in all); RelStorage refuses psycopg2 once gevent has patched the
process ("cannot have a wait callback but a wait callback is
installed").  Those three are refused, one line, before any work.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from scenarios.errors import ConfigError

KINDS = ("processes", "threads", "greenlets")
DEFAULT_KIND = "processes"

#: RelStorage drivers whose I/O goes through gevent's patched sockets.
COOPERATIVE_DRIVERS = ("pg8000", "PyMySQL")
#: Why each other driver cannot run greenlets side by side.
BLOCKING_DRIVERS = {
    "psycopg2": "RelStorage refuses psycopg2 in a process gevent has patched "
    "(give --pg-driver pg8000, or driver=pg8000 in the target)",
    "MySQLdb": "mysqlclient blocks in C: the greenlets would run one after "
    "another (give --mysql-driver PyMySQL, or driver=PyMySQL in the target)",
    "sqlite3": "sqlite3 blocks in C and never yields to gevent: the greenlets "
    "would run one after another",
}


def split(clients: int, per_process: int) -> list[int]:
    """The clients of each process: *per_process* each, the last the rest."""
    per_process = max(1, per_process)
    full, rest = divmod(clients, per_process)
    return [per_process] * full + ([rest] if rest else [])


def per_process(kind: str, asked: int | None, clients: int) -> int:
    """Clients per process of a point of *clients*: 1 for processes; for
    threads and greenlets *asked*, or all of them in one process."""
    if kind == "processes":
        return 1
    return min(asked or clients, clients)


def check_kind(kind: str, asked: int | None) -> None:
    """ConfigError for an unknown kind, or clients per process the kind
    does not take."""
    if kind not in KINDS:
        raise ConfigError(f"--concurrency: choose {', '.join(KINDS)}, not {kind!r}")
    if kind == "processes" and asked not in (None, 1):
        raise ConfigError(
            "--clients-per-process: processes run one client each; give "
            "--concurrency threads or greenlets for several"
        )


def greenlet_refusal(driver: str | None) -> str | None:
    """Why a RelStorage *driver* cannot run greenlets (None: it can)."""
    if driver is None or driver in COOPERATIVE_DRIVERS:
        return None
    known = BLOCKING_DRIVERS.get(driver)
    return known or f"driver {driver} is not known to yield to gevent"


def target_driver(spec: str) -> tuple[bool, str | None]:
    """(whether *spec* names RelStorage, the driver its clients use) for a
    client spec; (False, None) for ZEO and what cannot be told before it
    opens (a ZConfig text: checked once open, storage_refusal)."""
    from storages.relstorage.uri import RELSTORAGE_SCHEMES

    scheme = spec.partition("://")[0] if "://" in spec else ""
    backend = RELSTORAGE_SCHEMES.get(scheme)
    if backend is None:
        return False, None
    query = dict(parse_qsl(urlsplit(spec).query))
    driver = query.get("driver")
    if driver is None:
        from storages.relstorage.adapters import choose_driver

        driver = choose_driver(backend, None)
    return True, driver


def factory_driver(factory: Any) -> str | None:
    """The driver a RelStorage factory's clients use (None: not RelStorage)."""
    if getattr(factory, "backend", None) is None:
        return None
    return str(factory._named_driver())


def storage_refusal(storage: Any) -> str | None:
    """Why an open storage cannot serve greenlets (None: it can): ZEO's
    client can, RelStorage with a cooperative driver can, nothing else is
    known to."""
    name = type(storage).__name__
    if name == "ClientStorage":
        return None
    if name == "RelStorage":
        from storages.relstorage.adapters import driver_name

        return greenlet_refusal(driver_name(storage))
    return f"{name} is not known to yield to gevent"


def run_each(
    kind: str,
    count: int,
    one: Callable[[int], None],
    failed: Callable[[], Any] = lambda: None,
) -> None:
    """one(0), ..., one(count - 1) at once, as *kind* runs a process's
    clients: inline when there is one, else as threads or (a process gevent
    patched) greenlets; returns when every one has, or raises the first
    error one raised (*failed* is called at once, so the others can stop).
    The one place a process's clients are started (scale's and the
    matrix's)."""
    raised: list[BaseException] = []

    def guarded(i: int) -> None:
        try:
            one(i)
        except BaseException as e:  # the process's error, raised below
            raised.append(e)
            failed()

    if count == 1:
        guarded(0)
    elif kind == "greenlets":
        import gevent

        greenlets = [gevent.spawn(guarded, i) for i in range(count)]
        try:
            gevent.joinall(greenlets)
        finally:
            # A stop signal is thrown into the main greenlet (interrupts):
            # the others end here, not at the interpreter's exit.
            gevent.killall(greenlets, timeout=10)
    else:
        import threading

        threads = [threading.Thread(target=guarded, args=(i,)) for i in range(count)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    if raised:
        raise raised[0]
