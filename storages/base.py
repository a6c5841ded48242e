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
import dataclasses
import inspect
from collections.abc import Callable, MutableMapping
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar

# Re-exported: a storage module finds the whole contract here.
from storages.errors import CrashCutStorage as CrashCutStorage
from storages.errors import DamagedStorage as DamagedStorage
from storages.errors import NeedsRecovery as NeedsRecovery
from storages.errors import StorageError as StorageError
from storages.options import ConfiguredOptions as ConfiguredOptions
from storages.options import DBOptions as DBOptions
from storages.options import ListenOptions as ListenOptions
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


@dataclasses.dataclass(frozen=True)
class URIScheme:
    """A zodburi scheme whose URIs name a storage's databases, as its
    factory declares it (StorageFactory.uri_schemes); storages.named
    builds the one scheme table from these.

    default_port: the TCP port of its server when a URI names none (a
    server that must answer before anything opens); None: no server.
    read_only: its resolver opens read-only when asked (``read_only=1``),
    so that a census or a check never writes.
    local: the URI's path is a file or directory here, checked without
    writing by the factory's check_at() before anything opens it.
    query: keys zodburi's resolver gets unless the URI gives them
    (``wait_timeout=10``: a client that waits for its server, bounded).
    section: the ZConfig section type (``filestorage``) naming the same
    databases, whose ``path`` check_at() checks as it checks a local URI's.
    """

    name: str
    default_port: int | None = None
    read_only: bool = False
    local: bool = False
    query: str = ""
    section: str | None = None


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

    def server_round_trip(self) -> None:  # noqa: B027 - optional hook
        """Return once the server this store talks to has answered a request
        sent after every earlier one, and so has done what those asked,
        whatever it did after answering them (ZEO's server closes a commit's
        log after its reply).  A no-op where no server is talked to; the
        counts (scenarios.counts.child) end a phase's window with it."""

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

    A storage module declares, on its factory class, only what generic
    code (the commands, storages.named and storages.checks) asks:

    - ``name`` and ``description`` (registry name, one line of help);
    - ``option_groups``: its OptionGroup classes (a frozen dataclass of
      defaults that adds its own argparse options); the factory reads them
      with ``self.options.get(ThatClass)``;
    - its capabilities, which callers ask instead of testing classes:
      ``has_database``, ``keeps_directory``, ``starts_server``;
    - ``not_storage``, ``user_errors``, ``summary_rows``, ``uri_schemes``
      (below);
    - ``open(directory)`` importing its backend lazily, and the hooks it
      needs of the others, each a no-op by default: ``unavailable()``,
      ``preflight()``, ``running()``, ``check_existing()``, and for a
      database a user names ``check_at()``, ``held_at()``, ``path_uri()``,
      ``uri_opener()``, ``file_kind()``, ``report_note()``.

    Three capabilities are derived, never declared: ``servable`` (the
    factory implements served_section()), ``shared`` (it implements
    share()) and ``wraps_storage`` (its open() takes ``wrap``).

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
    #: open() starts a server process (unless told to use a running one).
    starts_server: ClassVar[bool] = False
    #: The backend's own exceptions whose str() is one line for the user
    #: (raised where the suite does not call the store, e.g. a load inside
    #: a phase); the CLI reports them as it reports StorageError.
    user_errors: ClassVar[tuple[type[Exception], ...]] = ()
    #: File name endings below the directory that are not the storage
    #: (config, logs, scratch files), left out of the size on disk.
    not_storage: ClassVar[tuple[str, ...]] = ()
    #: Rows of the report's summary table ("after the run") read from this
    #: storage's jar_stats(): (label, path of keys into jar_stats).
    summary_rows: ClassVar[tuple[tuple[str, tuple[str, ...]], ...]] = ()
    #: zodburi schemes (and their ZConfig section types) naming this
    #: storage's databases (storages.named, storages.checks).
    uri_schemes: ClassVar[tuple[URIScheme, ...]] = ()

    # -- derived (__init_subclass__): declared by implementing a hook ------

    #: runzeo can serve it to other processes: served_section() gives its
    #: ZConfig storage section and the %import lines that section needs.
    servable: ClassVar[bool] = False
    #: Several processes can use the same database at once (zeo, zeo+bdb,
    #: relstorage-*): share() gives what they open.
    shared: ClassVar[bool] = False
    #: open(directory, wrap=W) puts W(storage) between ZODB.DB and its ZODB
    #: storage (a wrapper storage such as zc.zlibstorage): what a composite
    #: (zlib+NAME) asks of the factory it takes (file, mapping, bdb).
    wraps_storage: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.servable = cls.served_section is not StorageFactory.served_section
        cls.shared = cls.share is not StorageFactory.share
        cls.wraps_storage = "wrap" in inspect.signature(cls.open).parameters

    @classmethod  # noqa: B027 - optional hook, a no-op by default
    def check_at(
        cls,
        path: Path,
        must_exist: bool = False,
        read_only: bool = False,
    ) -> None:
        """Check, writing nothing, the database at *path* that one of
        ``uri_schemes`` names (``local``, or its ``section``'s path), before
        anything opens it: DamagedStorage when it is not whole, StorageError
        when it is missing and *must_exist*, or held by another process
        unless *read_only* (a reader may look).  The default checks nothing."""

    @classmethod
    def report_note(cls, stats: dict[str, Any]) -> str | None:
        """One clause for the report's note on how this storage was set
        up, read from a trial's jar_stats() (RelStorage: "history-free,
        postgresql, psycopg2"); None when there is nothing to say (the
        default)."""
        return None

    @classmethod
    def file_kind(cls, path: Path, head: bytes) -> str | None:
        """What the existing file *path* is when it belongs to one of this
        storage's databases ("a FileStorage"), from *head* (its first 16
        bytes) or its name beside the database; None otherwise.  An output
        (--json...) is never written over such a file, --force or not.
        None by default."""
        return None

    @classmethod
    def held_at(cls, path: Path) -> bool:
        """Another process has the database at *path* (as check_at names
        it) open for writing (a ZEO server): a read-only look sees it as it
        was when opened.  False by default."""
        return False

    @classmethod
    def path_uri(cls, path: Path) -> str | None:
        """A URI of ``uri_schemes`` that opens, read-only, the database at
        *path* (the directory open() uses, or the storage's own file); None
        where there is none (a census then needs populate's marker there).
        StorageError when *path* holds no database of this storage."""
        return None

    @classmethod
    def uri_opener(
        cls, uri: str, read_only: bool, wait_timeout: float | None = None
    ) -> Callable[[], Any] | None:
        """What opens the ZODB storage *uri* (one of ``uri_schemes``) names,
        where the storage opens its URIs itself; None to leave it to
        zodburi's resolver (``read_only=1`` added where the scheme says
        ``read_only``).  *wait_timeout*: seconds a client waits for its
        server (None: the storage's default)."""
        return None

    def __init__(self, options: StorageOptions | None = None) -> None:
        self.options = options or StorageOptions()

    def served_section(self, directory: Path) -> tuple[str, tuple[str, ...]]:
        """(ZConfig section named "1" serving the data in *directory*, the
        modules runzeo must %import for it).  Implemented where runzeo can
        serve the storage (``servable``)."""
        raise NotImplementedError(f"{self.name} cannot be served by runzeo")

    def running(self) -> contextlib.AbstractContextManager[Any]:
        """What every trial of a run shares, held around all of them: a
        context manager entered once per run, before the first trial of
        this storage, and left after its last (on success, failure and
        Ctrl-C alike): the place for a resource every trial shares, such as
        a database server started once per run.  A null context by
        default."""
        return contextlib.nullcontext()

    def share(self, directory: Path) -> contextlib.AbstractContextManager[Shared]:
        """A fresh, empty database that other processes can open at once,
        held for the block: a context manager yielding a Shared, whose
        ``client`` is what each process opens (scenarios.load.target).
        Implemented where several processes can use the database
        (``shared``); called inside running(), any number of
        times, each time a new database (*directory*, owned by the caller,
        holds whatever files it needs: runzeo's data and log, a SQLite
        database).  Leaving the block stops whatever it started (a runzeo)
        and drops what it created, on success, failure and Ctrl-C alike.

        ZEO starts runzeo on its backend and yields ``zeo://HOST:PORT``;
        a RelStorage factory yields its zodburi URI (postgres://...,
        mysql://..., sqlite://...) or ZConfig text for a new database on
        the server running() started."""
        raise NotImplementedError(f"{self.name} cannot be shared between processes")

    def check_existing(self, directory: Path, recover: bool = False) -> str | None:
        """Check, without writing anything, the database open(*directory*)
        would open: DamagedStorage (one line: where, and the tool that
        repairs a copy) when it is not whole, StorageError when it is held
        by another process or is not this storage's.  Reads everything, so
        it costs a pass over the data.  Nothing there: nothing to check.
        Callers run it before any read-write open of a database they did
        not just create.

        With *recover* (--recover), a database whose only fault is the
        crash's (NeedsRecovery, CrashCutStorage) is recovered first, as its
        storage would when opened read-write, and checked whole again; the
        return value is one line saying what was dropped and where it is
        kept (None: nothing to recover).  Damage anywhere else is refused
        (DamagedStorage), nothing changed.  The default checks nothing (no
        files, or a server's database)."""
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
        (a server that must answer with these credentials, a port that must
        be free, a database of theirs opened read-only and closed);
        StorageError if it will not do.  No server is started here."""
