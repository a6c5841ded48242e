"""What every storage module provides, and the one error type for bad input.

A storage module holds one StorageFactory subclass.  A factory is cheap to
make (it only validates and remembers its options) and opens a *Store*: one
open database for one trial, as the phases see it: a root container, commit,
abort, transfer counters, size on disk, the cache controls the cold, warm and
hot rows need (reopen, minimize_cache, set_cache_size), pack, and close.

Factories import their backend inside open(), so that listing storages or
reporting a bad option never needs ZEO or berkeleydb to be importable.
Options are declared per storage module (storages.options.OptionGroup);
the StorageFactory docstring lists what else a storage module declares.
"""

from __future__ import annotations

import abc
import contextlib
from collections.abc import Callable, MutableMapping
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar

# Re-exported: a storage module finds the whole contract here.
from storages.options import DBOptions as DBOptions
from storages.options import OptionGroup as OptionGroup
from storages.options import StorageOptions as StorageOptions

#: The key under the ZODB root that holds everything the suite writes.  On a
#: database the suite did not create (--zeo-address, --storage-uri,
#: --storage-config) each trial writes below root[ROOT_KEY][trial key] only,
#: and removes its key when it ends (ZODBStore's *trial_key*).
ROOT_KEY = "vfab-loadtest"


def new_trial_key() -> str:
    """A key for one trial on a database the suite did not create: the time,
    the process and a random part, so that concurrent runs never share one."""
    import os
    import time
    import uuid

    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    return f"trial-{stamp}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


class StorageError(Exception):
    """A storage cannot be used as asked (bad option, unreachable server,
    port in use, locked or corrupt database).

    str() of it is one line meant for the user; the CLI prints it on stderr
    and exits with status 2.
    """


class DamagedStorage(StorageError):
    """A database that is there but not whole, found by a read-only check
    (StorageFactory.check_existing); nothing was changed.

    str() is one line: what is damaged, where (*where* reads after "is
    damaged": "at byte 4242 (transaction 3)"), and what repairs a copy.
    """

    def __init__(self, path: str, where: str, what: str, repair: str) -> None:
        super().__init__(
            f"{path} is damaged {where}: {what}; nothing was changed "
            f"(repair a copy: {repair})"
        )
        self.path = path
        self.where = where
        self.what = what
        self.repair = repair


class NeedsRecovery(DamagedStorage):
    """A database whose only fault is what a crash leaves, work its
    storage's recovery would do when it is next opened for writing; left as
    it is unless the user asks for recovery (StorageFactory.recover_existing,
    --recover).  str() is one line saying what the crash left and that
    --recover runs the recovery."""

    def __init__(self, path: str, message: str) -> None:
        StorageError.__init__(self, message)
        self.path = path
        self.where = ""
        self.what = message
        self.repair = "--recover"


class CrashCutStorage(NeedsRecovery):
    """A database whose only fault is what a crash leaves: a last transaction
    that was never finished (FileStorage: cut short, or its status still
    'c'), which nothing acknowledged.  Left as it is unless the user asks
    for recovery (StorageFactory.recover_existing, --recover).

    str() is one line: which transaction, how many bytes, and that
    --recover drops it (*recovery* says how the bytes are kept).
    """

    def __init__(
        self,
        path: str,
        transaction: int,
        offset: int,
        nbytes: int,
        how: str,
        recovery: str,
    ) -> None:
        super().__init__(
            path,
            f"{path} ends in a transaction cut by a crash: transaction "
            f"{transaction} (at byte {offset}, {nbytes} bytes) {how}; nothing "
            f"in it was acknowledged; nothing was changed ({recovery})",
        )
        self.where = f"at byte {offset}"
        self.what = how
        self.repair = recovery
        self.transaction = transaction
        self.offset = offset
        self.nbytes = nbytes


#: What ZODBStore.commit runs inside: a context manager factory.  The
#: default does nothing; a CLI that wants Ctrl-C held until a commit in
#: flight has finished installs its own (scenarios.cli.interrupts), so that
#: storages never touch signal handlers themselves.
commit_guard: Callable[[], contextlib.AbstractContextManager[Any]] = (
    contextlib.nullcontext
)


def _nothing() -> None:
    return None


#: Called when a ZODBStore's database has closed normally (close, reopen).
#: The default does nothing; a CLI installs a check that raises again a
#: Ctrl-C the close swallowed: FileStorage.close() catches everything,
#: KeyboardInterrupt included, around saving its index.
after_close: Callable[[], None] = _nothing


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

    def cache_hits(self) -> int | None:
        """Hits of a client cache below the object cache so far (ZEO's), or
        None; read locally, never from a server."""
        return None

    def diagnose(self) -> str | None:
        """Why this store may have stopped working, when something outside
        the process knows (a server it started exited), or None: the runner
        adds it to the one line that reports a failed phase."""
        return None

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


class Shared:
    """A database other processes open at once, as StorageFactory.share()
    yields it.

    ``client`` is what a process opens to get a ZODB.DB: a zodburi URI
    (``zeo://127.0.0.1:8100``, ``postgres://...``) or ZConfig text (a
    ``<zodb>`` section, after any ``%import`` lines); see
    scenarios.load.target.open_target.  ``server_pids()`` are the processes
    whose CPU time is the server's (each with its children: PostgreSQL's
    backends); none where the clients do the storage's work themselves
    (SQLite).  ``can_kill``: kill_server() kills the server abruptly
    (SIGKILL, as a crash would) and restart_server() starts it again on the
    same data and address, so that clients reconnect; only for servers the
    suite started.
    """

    can_kill: bool = False

    def __init__(self, client: str) -> None:
        self.client = client

    def server_pids(self) -> list[int]:
        return []

    def kill_server(self) -> None:
        raise NotImplementedError("this server cannot be killed by the suite")

    def restart_server(self) -> None:
        raise NotImplementedError("this server cannot be restarted by the suite")

    @property
    def server_running(self) -> bool:
        return True


class StorageFactory(abc.ABC):
    """Opens Stores of one kind.  Subclasses set the class attributes.

    A storage module declares, on its factory class:

    - ``name`` and ``description`` (registry name, one line of help);
    - ``option_groups``: its OptionGroup classes (a frozen dataclass of
      defaults that adds its own argparse options); the factory reads them
      with ``self.options.get(ThatClass)``;
    - its capabilities, which callers ask instead of testing classes:
      ``has_database``, ``keeps_directory``, ``servable`` (then also
      ``served_section()``), ``starts_server``, ``shared`` (then also
      ``share()``);
    - ``not_storage``: names of files it writes beside the data that are
      not the storage (left out of the size on disk);
    - ``check_existing(directory)``: read the database open(directory)
      would open, writing nothing, and raise DamagedStorage when it is
      not whole; callers run it before any read-write open of a database
      they did not just create;
    - ``open(directory)`` importing its backend lazily, ``unavailable()``,
      and ``running()``: a context manager entered once per run, before the
      first trial of this storage, and left after its last (on success,
      failure and Ctrl-C alike): the place for a resource every trial
      shares, such as a database server started once per run.  The default
      does nothing.

    Other packages add storages through the entry point group
    ``vfab_loadtest.storages`` (each entry point names a subclass).
    """

    #: Registry name, as typed on the command line.
    name: ClassVar[str]
    #: One line for `vfab-bench storages` and --help.
    description: ClassVar[str]
    #: The option groups this factory reads (DBOptions for a ZODB database).
    option_groups: ClassVar[tuple[type[OptionGroup], ...]] = (DBOptions,)

    #: A ZODB database at all (memory: plain objects, no database).
    has_database: ClassVar[bool] = True
    #: Data written in open(directory) is there again after close and a new
    #: open(directory) (file, bdb); the contract test relies on it, and only
    #: such storages hold a populated data set at a path.
    keeps_directory: ClassVar[bool] = False
    #: runzeo can serve it to other processes: served_section() gives its
    #: ZConfig storage section and the %import lines that section needs.
    servable: ClassVar[bool] = False
    #: open() starts a server process (unless told to use a running one).
    starts_server: ClassVar[bool] = False
    #: Several processes can use the same database at once (zeo, zeo+bdb):
    #: then share() gives what they open.
    shared: ClassVar[bool] = False
    #: open(directory, wrap=W) puts W(storage) between ZODB.DB and its ZODB
    #: storage (a wrapper storage such as zc.zlibstorage): what a composite
    #: (zlib+NAME) asks of the factory it takes (file, mapping, bdb).
    wraps_storage: ClassVar[bool] = False
    #: The backend's own exceptions whose str() is one line for the user
    #: (raised where the suite does not call the store, e.g. a load inside
    #: a phase); the CLI reports them as it reports StorageError.
    user_errors: ClassVar[tuple[type[Exception], ...]] = ()
    #: File name endings below the directory that are not the storage
    #: (config, logs, scratch files), left out of the size on disk.
    not_storage: ClassVar[tuple[str, ...]] = ()

    def __init__(self, options: StorageOptions | None = None) -> None:
        self.options = options or StorageOptions()

    def served_section(self, directory: Path) -> tuple[str, tuple[str, ...]]:
        """(ZConfig section named "1" serving the data in *directory*, the
        modules runzeo must %import for it).  Only where ``servable``."""
        raise NotImplementedError(f"{self.name} cannot be served by runzeo")

    def check(self) -> None:  # noqa: B027 - optional hook, a no-op by default
        """Before a run: see that the database can be used (a user's database
        opened read-only and closed, a server reached); StorageError if not."""

    def running(self) -> contextlib.AbstractContextManager[Any]:
        """What every trial of a run shares, held around all of them (see
        the class docstring).  A null context by default."""
        return contextlib.nullcontext()

    def share(self, directory: Path) -> contextlib.AbstractContextManager[Shared]:
        """A fresh, empty database that other processes can open at once,
        held for the block: a context manager yielding a Shared, whose
        ``client`` is what each process opens (scenarios.load.target).
        Only where ``shared``; called inside running(), any number of
        times, each time a new database (*directory*, owned by the caller,
        holds whatever files it needs: runzeo's data and log, a SQLite
        database).  Leaving the block stops whatever it started (a runzeo)
        and drops what it created, on success, failure and Ctrl-C alike.

        ZEO starts runzeo on its backend and yields ``zeo://HOST:PORT``;
        a RelStorage factory yields its zodburi URI (postgres://...,
        mysql://..., sqlite://...) or ZConfig text for a new database on
        the server running() started."""
        raise NotImplementedError(f"{self.name} cannot be shared between processes")

    def check_existing(self, directory: Path) -> None:  # noqa: B027
        """Check, without writing anything, the database open(*directory*)
        would open: DamagedStorage (one line: where, and the tool that
        repairs a copy) when it is not whole, StorageError when it is held
        by another process or is not this storage's.  Reads everything, so
        it costs a pass over the data.  Nothing there: nothing to check.
        The default checks nothing (no files, or a server's database)."""

    def recover_existing(self, directory: Path) -> str | None:
        """Recover the database in *directory* from a crash, as its storage
        would when opened read-write, but only when its only fault is the
        crash's (CrashCutStorage from check_existing), and check it whole
        again; one line saying what was dropped and where it is kept, or
        None when there was nothing to recover.  Damage anywhere else is
        refused (DamagedStorage), nothing changed.  The default: nothing
        to recover, only the check."""
        self.check_existing(directory)
        return None

    @abc.abstractmethod
    def open(self, directory: Path) -> Store:
        """Open a store whose files (if any) live in *directory*, an existing
        directory owned by the caller.  Raises StorageError for conditions a
        user can fix."""

    def unavailable(self) -> str | None:
        """Why this storage cannot run on this machine (a missing package or
        binary), or None.  Tests skip with this reason."""
        return None

    def preflight(self) -> None:  # noqa: B027 - optional hook, a no-op by default
        """Check, before a run starts, what the user named for this storage
        (a server that must answer, a port that must be free); StorageError
        if it will not do.  Cheap: no server is started here."""


#: A wrapper storage around a ZODB storage: storage -> wrapping storage.
Wrap = Callable[[Any], Any]


def wrapping(open_storage: Callable[[], Any], wrap: Wrap | None) -> Callable[[], Any]:
    """*open_storage*, its storage behind *wrap* (when given); the storage is
    closed if the wrapper fails."""
    if wrap is None:
        return open_storage

    def open_wrapped() -> Any:
        storage = open_storage()
        try:
            return wrap(storage)
        except BaseException:
            storage.close()
            raise

    return open_wrapped


def open_wrapped(factory: StorageFactory, directory: Path, wrap: Wrap) -> Store:
    """*factory*'s store with *wrap* around its storage (``wraps_storage``)."""
    if not factory.wraps_storage:
        raise StorageError(f"storage {factory.name!r} cannot take a wrapper storage")
    opener: Any = factory  # open(directory, wrap=...) where wraps_storage
    return opener.open(directory, wrap=wrap)  # type: ignore[no-any-return]


class ZODBStore(Store):
    """A Store over a ZODB.DB: one connection with its own transaction
    manager, the suite's data under root[ROOT_KEY].

    *open_storage* returns a new IStorage on the same data each time it is
    called (reopen calls it again); *size* reports bytes on disk.

    With a *trial_key* the database is the user's, not the suite's: root()
    is root[ROOT_KEY][trial_key], reset() empties that key only, close()
    removes it in a committed transaction, and the store packs only if
    *packs* (pack removes old revisions of the whole database).  Limits: an
    interrupted process leaves its trial key behind (the name says when and
    which process wrote it); root[ROOT_KEY] itself stays, emptied.
    """

    def __init__(
        self,
        name: str,
        open_storage: Callable[[], Any],
        options: StorageOptions,
        size: Callable[[], int | None] | None = None,
        on_close: Callable[[], None] | None = None,
        trial_key: str | None = None,
        packs: bool = True,
    ) -> None:
        self.name = name
        self._open_storage = open_storage
        self._options = options
        self._size = size
        self._on_close = on_close
        self.trial_key = trial_key
        self.can_pack = packs
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
        from persistent.mapping import PersistentMapping

        root = self.connection.root()
        if ROOT_KEY not in root:
            root[ROOT_KEY] = PersistentMapping()
        ours = root[ROOT_KEY]
        if self.trial_key is None:
            return ours  # type: ignore[no-any-return]
        if self.trial_key not in ours:
            ours[self.trial_key] = PersistentMapping()
        return ours[self.trial_key]  # type: ignore[no-any-return]

    def reset(self) -> None:
        from persistent.mapping import PersistentMapping

        if self.trial_key is None:
            self.connection.root()[ROOT_KEY] = PersistentMapping()
            self.commit()
        else:
            key = self.trial_key

            def empty_trial() -> None:
                self.root()  # root[ROOT_KEY] made where absent
                self.connection.root()[ROOT_KEY][key] = PersistentMapping()

            self._commit_retrying(empty_trial)
        self.transfer_counts()

    def _commit_retrying(self, change: Callable[[], None], attempts: int = 5) -> None:
        """change() and commit, again after a ConflictError: another run on
        the same database adds or removes its own key in root[ROOT_KEY]."""
        from ZODB.POSException import ConflictError

        for attempt in range(attempts):
            try:
                change()
                self.commit()
                return
            except ConflictError:
                self.abort()  # and see the other run's commit
                if attempt == attempts - 1:
                    raise

    def _remove_trial(self) -> None:
        """Remove this trial's key from a database the suite did not create,
        committed; nothing else is written."""
        if self.trial_key is None or self.connection is None:
            return
        key = self.trial_key

        def remove() -> None:
            ours = self.connection.root().get(ROOT_KEY)
            if ours is not None and key in ours:
                del ours[key]

        self.transaction_manager.abort()
        self._commit_retrying(remove)

    def commit(self) -> None:
        # commit_guard is looked up now: a CLI installs its own after import.
        with commit_guard():
            self.transaction_manager.commit()

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
        if not self.can_pack:
            raise NotImplementedError(f"{self.name}: not the suite's to pack")
        self.db.pack()

    def _close_db(self) -> None:
        if self.connection is not None:
            self.transaction_manager.abort()
            self.connection.close()
            self.connection = None
        if self.db is not None:
            self.db.close()
            self.db = None
            # Looked up now, like commit_guard.
            after_close()

    def close(self) -> None:
        try:
            try:
                self._remove_trial()
            finally:
                self._close_db()
        finally:
            if self._on_close is not None:
                on_close, self._on_close = self._on_close, None
                on_close()
