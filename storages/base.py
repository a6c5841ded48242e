"""What every storage module provides, and the one error type for bad input.

A storage module holds one StorageFactory subclass.  A factory is cheap to
make (it only validates and remembers its options) and opens a *Store*: one
open database for one trial, as the phases see it: a root container, commit,
abort, transfer counters, size on disk, the cache controls the cold, warm and
hot rows need (reopen, minimize_cache, set_cache_size), pack, and close.

Factories import their backend inside open(), so that listing storages or
reporting a bad option never needs ZEO or berkeleydb to be importable.
"""

from __future__ import annotations

import _thread
import abc
import dataclasses
import sys
import threading
from collections.abc import Callable, MutableMapping
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar, NoReturn

#: The key under the ZODB root that holds everything the suite writes.  On a
#: server the suite did not start (--zeo-address) nothing else is touched.
ROOT_KEY = "vfab-loadtest"


class _Interrupts:
    """Ctrl-C deferred while a commit is in flight.

    A KeyboardInterrupt inside two-phase commit leaves ZEO's client with a
    half-sent transaction (and asyncio tracebacks on stderr).  Once
    defer_interrupts() has installed the handler, SIGINT during
    ZODBStore.commit() is held until the commit returns, then raised.

    Python swallows what a gc callback, a weakref callback or __del__ raises
    (and reports it to sys.unraisablehook): a KeyboardInterrupt raised while
    one of those runs is asked for again, from another thread, so that it
    lands in ordinary code.  Once Ctrl-C has been raised (*raised*), what
    ZODB, ZEO and asyncio log with a traceback while the interrupted loads
    unwind ("Couldn't load state", "exception was never retrieved") is noise,
    and the last-resort log handler drops it.
    """

    critical = 0
    pending = False
    raised = False

    @classmethod
    def handler(cls, signum: int, frame: object) -> None:
        if cls.critical:
            cls.pending = True
        else:
            cls.interrupt()

    @classmethod
    def interrupt(cls) -> NoReturn:
        cls.raised = True
        raise KeyboardInterrupt

    @classmethod
    def leave(cls) -> None:
        cls.critical -= 1
        if cls.pending and not cls.critical:
            cls.pending = False
            cls.interrupt()

    @staticmethod
    def unraisable(unraisable: Any) -> None:
        exc_type = unraisable.exc_type
        if exc_type is not None and issubclass(exc_type, KeyboardInterrupt):
            # Not from here: interrupt_main() would run the handler at once,
            # still inside the callback that swallows it.
            threading.Timer(0.001, _thread.interrupt_main).start()
            return
        sys.__unraisablehook__(unraisable)


def _quiet_after_interrupt(record: Any) -> bool:
    return not (_Interrupts.raised and getattr(record, "exc_info", None))


def defer_interrupts() -> None:
    """Install the SIGINT handler that lets a commit finish before Ctrl-C
    takes effect (call from the main thread, e.g. in a CLI), make sure no
    callback swallows Ctrl-C, and drop the tracebacks logged by the work an
    interrupt cut short."""
    import logging
    import signal

    signal.signal(signal.SIGINT, _Interrupts.handler)
    sys.unraisablehook = _Interrupts.unraisable
    last_resort = logging.lastResort
    if last_resort is not None and _quiet_after_interrupt not in last_resort.filters:
        last_resort.addFilter(_quiet_after_interrupt)


class StorageError(Exception):
    """A storage cannot be used as asked (bad option, unreachable server,
    port in use, locked or corrupt database).

    str() of it is one line meant for the user; the CLI prints it on stderr
    and exits with status 2.
    """


@dataclasses.dataclass(frozen=True)
class StorageOptions:
    """Options any factory may read; each one documented here, defaults here.

    zeo_address: (host, port) of an existing ZEO server to use instead of
        starting one (None: start runzeo on 127.0.0.1 per trial).
    zeo_port: port for the runzeo the suite starts (0: a free port).
    cache_size: ZODB connection cache target, in objects (None: ZODB's
        default, 400).
    zeo_cache_size: ZEO client cache, in bytes (None: ZEO's default, 20 MB).
    bdb_cache_size: Berkeley DB cache, in bytes (None: the storage default).
    bdb_durability: "sync" (default) or "write-nosync".
    """

    zeo_address: tuple[str, int] | None = None
    zeo_port: int = 0
    cache_size: int | None = None
    zeo_cache_size: int | None = None
    bdb_cache_size: int | None = None
    bdb_durability: str = "sync"

    def to_json(self) -> dict[str, Any]:
        """The options as JSON values (an address as "HOST:PORT")."""
        options = dataclasses.asdict(self)
        if self.zeo_address is not None:
            host, port = self.zeo_address
            options["zeo_address"] = f"{host}:{port}"
        return options

    def db_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ZODB.DB built from these options."""
        return {} if self.cache_size is None else {"cache_size": self.cache_size}


class Store(abc.ABC):
    """One open database for one trial.

    Use it as a context manager: leaving the block closes the database and
    stops whatever server the store started, on success, failure and
    KeyboardInterrupt alike.
    """

    #: The registry name of the factory that opened this store.
    name: str = ""

    @abc.abstractmethod
    def root(self) -> MutableMapping[str, Any]:
        """The suite's root container (created empty when absent)."""

    def reset(self) -> None:  # noqa: B027 - optional hook, a no-op by default
        """Replace the suite's root container with an empty one, committed.

        Called once at the start of a trial, outside any timed region, so
        that a trial on an existing server starts from nothing too.
        """

    @abc.abstractmethod
    def commit(self) -> None:
        """Commit the current transaction."""

    @abc.abstractmethod
    def abort(self) -> None:
        """Abort the current transaction."""

    def transfer_counts(self) -> tuple[int, int] | None:
        """(objects loaded, objects stored) since the last call, or None where
        the store has no database (memory)."""
        return None

    def size_bytes(self) -> int | None:
        """Bytes the storage occupies (file or environment size), or None."""
        return None

    def reopen(self) -> None:  # noqa: B027 - optional hook, a no-op by default
        """Close the database and open it again on the same data, so that the
        object cache (and a ZEO client cache) starts empty.  A no-op where
        there is no database."""

    def minimize_cache(self) -> None:  # noqa: B027 - optional hook
        """Turn every unmodified object in memory into a ghost, keeping what
        lies below the object cache (a ZEO client cache, the OS page cache)
        warm.  A no-op where there is no object cache."""

    def trim_cache(self) -> None:  # noqa: B027 - optional hook
        """Shrink the object cache to its target size now (between batches of
        a long load), as ZODB does itself at transaction boundaries."""

    def set_cache_size(self, objects: int | None) -> None:  # noqa: B027
        """Set the object cache's target size, in objects; None restores the
        size the store was opened with.  A no-op without an object cache."""

    #: True where pack() removes old revisions (not on the memory store).
    can_pack: bool = False

    def pack(self) -> None:
        """Pack to now: remove every revision no longer current."""
        raise NotImplementedError(f"{self.name} does not pack")

    def jar_stats(self) -> dict[str, Any]:
        """Backend counters worth recording after a run (ZEO server status,
        client cache stats...).  Empty by default."""
        return {}

    @abc.abstractmethod
    def close(self) -> None:
        """Close everything this store opened; safe to call twice."""

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class StorageFactory(abc.ABC):
    """Opens Stores of one kind.  Subclasses set the class attributes."""

    #: Registry name, as typed on the command line.
    name: ClassVar[str]
    #: One line for `vfab-bench storages` and --help.
    description: ClassVar[str]
    #: True when data written in a directory is there again after close and
    #: open(directory) (file, zeo, bdb); the contract test relies on it.
    persistent: ClassVar[bool] = False

    def __init__(self, options: StorageOptions | None = None) -> None:
        self.options = options or StorageOptions()

    @abc.abstractmethod
    def open(self, directory: Path) -> Store:
        """Open a store whose files (if any) live in *directory*, an existing
        directory owned by the caller.  Raises StorageError for conditions a
        user can fix."""

    def unavailable(self) -> str | None:
        """Why this storage cannot run on this machine (a missing package or
        binary), or None.  Tests skip with this reason."""
        return None


class ZODBStore(Store):
    """A Store over a ZODB.DB: one connection with its own transaction
    manager, the suite's data under root[ROOT_KEY].

    *open_storage* returns a new IStorage on the same data each time it is
    called (reopen calls it again); *size* reports bytes on disk.
    """

    def __init__(
        self,
        name: str,
        open_storage: Callable[[], Any],
        options: StorageOptions,
        size: Callable[[], int | None] | None = None,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        self.name = name
        self._open_storage = open_storage
        self._options = options
        self._size = size
        self._on_close = on_close
        self.db: Any = None
        self.connection: Any = None
        self._open()

    def _open(self) -> None:
        import transaction
        import ZODB

        storage = self._open_storage()
        try:
            self.db = ZODB.DB(storage, **self._options.db_kwargs())
        except BaseException:
            storage.close()
            raise
        self._opened_cache_size = self.db.getCacheSize()
        self.transaction_manager = transaction.TransactionManager()
        self.connection = self.db.open(self.transaction_manager)

    def root(self) -> MutableMapping[str, Any]:
        root = self.connection.root()
        if ROOT_KEY not in root:
            from persistent.mapping import PersistentMapping

            root[ROOT_KEY] = PersistentMapping()
        return root[ROOT_KEY]  # type: ignore[no-any-return]

    def reset(self) -> None:
        from persistent.mapping import PersistentMapping

        self.connection.root()[ROOT_KEY] = PersistentMapping()
        self.commit()
        self.transfer_counts()

    def commit(self) -> None:
        _Interrupts.critical += 1
        try:
            self.transaction_manager.commit()
        finally:
            _Interrupts.leave()

    def abort(self) -> None:
        self.transaction_manager.abort()

    def transfer_counts(self) -> tuple[int, int] | None:
        loads, stores = self.connection.getTransferCounts(clear=True)
        return int(loads), int(stores)

    def size_bytes(self) -> int | None:
        if self._size is not None:
            return self._size()
        return int(self.db.storage.getSize())

    def reopen(self) -> None:
        self._close_db()
        self._open()

    def minimize_cache(self) -> None:
        self.connection.cacheMinimize()

    def trim_cache(self) -> None:
        self.connection.cacheGC()

    def set_cache_size(self, objects: int | None) -> None:
        if objects is None:
            objects = self._opened_cache_size
        # DB.setCacheSize reaches every connection of the pool, ours included.
        self.db.setCacheSize(objects)

    can_pack = True

    def pack(self) -> None:
        self.db.pack()

    def _close_db(self) -> None:
        if self.connection is not None:
            self.transaction_manager.abort()
            self.connection.close()
            self.connection = None
        if self.db is not None:
            self.db.close()
            self.db = None

    def close(self) -> None:
        try:
            self._close_db()
        finally:
            if self._on_close is not None:
                on_close, self._on_close = self._on_close, None
                on_close()
