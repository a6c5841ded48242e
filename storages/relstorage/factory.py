"""What the relstorage-* factories share (RelStorage on SQLite, PostgreSQL
and MariaDB); each backend's factories live in its own module (sqlite.py,
postgresql.py, mysql.py, each naming its two in FACTORIES), the six in
registry order in backends.py, their options in options.py.

Six names, one per backend and history mode, so that a run can set both
modes side by side and every column says which one it measured:

    relstorage-sqlite  relstorage-sqlite-hp   sqlite3 files in the trial's
                                              directory (no server)
    relstorage-pg      relstorage-pg-hp       a fresh database per trial on a
                                              PostgreSQL the suite starts once
                                              per run (or --pg-dsn's)
    relstorage-mysql   relstorage-mysql-hp    the same on MariaDB (or
                                              --mysql-dsn's)

(no suffix: history-free; ``-hp``: history-preserving.)  The server is
started in running(), around every trial of the storage, and stopped when
the run leaves it (success, failure, Ctrl-C); open() creates the trial's
database and the store drops it when it closes.  open() called outside
running() (a benchmark fixture, a test) starts a server for that one store
and stops it on close.  With --pg-dsn / --mysql-dsn the suite starts
nothing: it creates and drops only databases named with a unique prefix,
and says so on stderr once per run.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

from storages.base import (
    DBOptions,
    ListenOptions,
    OptionGroup,
    Shared,
    StorageFactory,
    Store,
)
from storages.process import ServedShared
from storages.relstorage.drivers import DRIVERS, pip_name
from storages.relstorage.options import EXTRA, relstorage_missing
from storages.zodbstore import ZODBStore


class RelStorageStore(ZODBStore):
    """A ZODBStore over RelStorage; its jar_stats say the backend, history
    mode, driver and database."""

    info: dict[str, Any]

    def jar_stats(self) -> dict[str, Any]:
        from storages.relstorage.adapters import driver_name

        stats = dict(self.info)
        try:
            stats["driver"] = driver_name(self.db.storage)
        except Exception:  # a bonus, never a reason to fail a trial
            pass
        return stats


class RelStorageShared(ServedShared):
    """A RelStorage database other processes open, by its URI
    (storages.relstorage.uri), on a server this run started (a user's
    server, or SQLite's files, are a plain Shared: nothing to kill).  The
    kill (a crash) also ends the admin connection of *databases*."""

    def __init__(self, client: str, server: Any, databases: Any) -> None:
        super().__init__(client, server)
        self.databases = databases

    def _after_kill(self) -> None:
        self.databases.close()  # its connection died with the server


class _RelStorageFactory(StorageFactory):
    """What the six relstorage-* factories share."""

    option_groups: ClassVar[tuple[type[OptionGroup], ...]] = (DBOptions,)
    #: RelStorage's backend name (open_relstorage's first argument).
    backend: ClassVar[str]
    keep_history: ClassVar[bool] = False

    @classmethod
    def uri_opener(
        cls, uri: str, read_only: bool, wait_timeout: float | None = None
    ) -> Callable[[], Any] | None:
        # The suite's opener, not RelStorage's resolver: a driver always
        # named, MariaDB's workarounds (storages.relstorage.uri).
        from storages.relstorage.uri import open_uri

        return lambda: open_uri(uri, read_only=read_only)

    @classmethod
    def report_note(cls, stats: dict[str, Any]) -> str | None:
        """ "history-free, postgresql, psycopg2" from RelStorageStore's
        jar_stats (the backend and driver named once when they agree)."""
        if "history" not in stats:
            return None
        parts = [f"history-{stats['history']}"]
        parts += [str(stats[k]) for k in ("backend", "driver") if stats.get(k)]
        return ", ".join(dict.fromkeys(parts))

    @property
    def history(self) -> str:
        return "preserving" if self.keep_history else "free"

    def _open(self, **where: Any) -> Callable[[], Any]:
        """The store's open_storage: a RelStorage on *where*, each call."""
        from storages.relstorage.adapters import open_relstorage

        def open_storage() -> Any:
            return open_relstorage(
                self.backend,
                keep_history=self.keep_history,
                driver=self._driver(),
                **where,
            )

        return open_storage

    def _driver(self) -> str | None:
        return None

    def _named_driver(self) -> str:
        """The driver clients use: always named (RelStorage's "auto"
        picks its gevent drivers once locust is installed)."""
        from storages.relstorage.adapters import choose_driver

        return choose_driver(self.backend, self._driver())

    def share(self, directory: Path) -> contextlib.AbstractContextManager[Shared]:
        return self._share(Path(directory))

    def _share(self, directory: Path) -> contextlib.AbstractContextManager[Shared]:
        raise NotImplementedError


class _ServerFactory(_RelStorageFactory):
    """A RelStorage on a database server: the suite's own (started in
    running()) or the user's (--pg-dsn, --mysql-dsn)."""

    # The server is started once per run in running() (open() outside
    # running() starts one for its store alone).
    starts_server = True
    #: For messages: "PostgreSQL", "MySQL".
    product: ClassVar[str]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._databases: Any = None  # TrialDatabases while running()
        self._server_process: Any = None  # the server running() started

    # -- what subclasses provide --------------------------------------------

    def _user_server(self) -> str | None:
        """The DSN the user gave, or None."""
        raise NotImplementedError

    def _port(self) -> int:
        """The port the user named for the server the suite starts (its
        --pg-port, --mysql-port), or 0."""
        raise NotImplementedError

    def _listen(self) -> tuple[str, int]:
        """Where the server the suite starts listens: ListenOptions (serve's
        --host and --port), else 127.0.0.1 and _port()."""
        listen = self.options.get(ListenOptions)
        return listen.host, listen.port or self._port()

    def _server(self) -> Any:
        """A ServerProcess on _listen(), not started."""
        raise NotImplementedError

    def _server_missing(self) -> str | None:
        raise NotImplementedError

    def _user_databases(self, dsn: str) -> Any:
        raise NotImplementedError

    def _where(self, databases: Any, database: str) -> dict[str, Any]:
        """open_relstorage's keywords for *database*."""
        raise NotImplementedError

    def _drivers(self) -> tuple[str, ...]:
        """The backend's drivers, by the names pip installs them by."""
        return tuple(pip_name(d) for d in DRIVERS[self.backend])

    # -- the shared parts ---------------------------------------------------

    def unavailable(self) -> str | None:
        missing = relstorage_missing()
        if missing:
            return missing
        from storages.relstorage.adapters import available_drivers

        wanted = self._driver()
        installed = available_drivers(self.backend)
        if wanted is not None and wanted not in installed:
            return f"{self.product} driver {wanted} is not installed: {EXTRA}"
        if not installed:
            return (
                f"no {self.product} driver installed "
                f"({' or '.join(self._drivers())}): {EXTRA}"
            )
        if self._user_server() is None:
            return self._server_missing()
        return None

    def preflight(self) -> None:
        """Before a run: the user's server answers with these credentials,
        or the port the user named for ours is free (StorageError)."""
        dsn = self._user_server()
        if dsn is not None:
            databases = self._user_databases(dsn)
            try:
                databases.connect()
            finally:
                databases.close()
        else:
            from storages.ports import check_port_free

            check_port_free(*self._listen())  # port 0: the address alone

    @contextlib.contextmanager
    def _serving(self, announce: bool) -> Iterator[Any]:
        """TrialDatabases on the user's server or on one started now (and
        stopped, with every database made, on the way out)."""
        dsn = self._user_server()
        if dsn is not None:
            databases = self._user_databases(dsn)
            with databases:
                databases.connect()
                if announce:
                    print(f"{self.name}: {databases.description}", file=sys.stderr)
                yield databases
            return
        with self._server() as server:
            with server.databases() as databases:
                outer = self._server_process
                self._server_process = server
                try:
                    yield databases
                finally:
                    self._server_process = outer

    @contextlib.contextmanager
    def _running(self) -> Iterator[None]:
        if self._databases is not None:  # nested: the outer one serves
            yield
            return
        with self._serving(announce=True) as databases:
            self._databases = databases
            try:
                yield
            finally:
                self._databases = None

    def running(self) -> contextlib.AbstractContextManager[Any]:
        return self._running()

    def _uri(self, databases: Any, database: str) -> str:
        """The target URI of *database*."""
        raise NotImplementedError

    @contextlib.contextmanager
    def _share(self, directory: Path) -> Iterator[Shared]:
        """A fresh database on the server (running()'s, or one started for
        this block), dropped on leaving."""
        with contextlib.ExitStack() as stack:
            databases = self._databases
            if databases is None:
                databases = stack.enter_context(self._serving(announce=False))
            database = databases.create()
            uri = self._uri(databases, database)
            shared = (
                Shared(uri)
                if self._server_process is None
                else RelStorageShared(uri, self._server_process, databases)
            )
            try:
                yield shared
            finally:
                if shared.server_running:
                    databases.drop(database)

    def open(self, directory: Path) -> Store:
        if self._databases is not None:
            return self._open_on(self._databases, on_close=None)
        # Outside running(): a server (or the user's) for this store alone.
        stack = contextlib.ExitStack()
        try:
            databases = stack.enter_context(self._serving(announce=False))
            return self._open_on(databases, on_close=stack.close)
        except BaseException:
            stack.close()
            raise

    def _open_on(self, databases: Any, on_close: Callable[[], None] | None) -> Store:
        database = databases.create()

        def close() -> None:
            try:
                databases.drop(database)
            finally:
                if on_close is not None:
                    on_close()

        try:
            store = RelStorageStore(
                self.name,
                self._open(**self._where(databases, database)),
                self.options,
                size=lambda: databases.size(database),
                on_close=close,
            )
        except BaseException:
            close()
            raise
        store.info = {
            "backend": self.backend,
            "history": self.history,
            "database": database,
            "server": "user" if self._user_server() is not None else "suite",
        }
        return store
