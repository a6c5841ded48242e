"""zeo's factory (ZEOFactory) and the client side: open_client(), ZEOStore
and ZEOShared.

A store is a ZEO ClientStorage connected over TCP to a runzeo
(storages.zeo.server) serving the factory's backend.  Inside running()
each trial's open() takes a fresh storage of a ZEOPool
(storages.zeo.pool).  Outside running() (a test, share() for scale and
locust, serve) each open() starts a runzeo of its own in its directory and
stops it when the store closes.  With --zeo-address the store uses that
server instead, starts nothing and writes only under root[ROOT_KEY].
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

from storages.base import (
    ConfiguredOptions,
    DBOptions,
    ListenOptions,
    OptionGroup,
    Shared,
    StorageError,
    StorageFactory,
    StorageOptions,
    Store,
    URIScheme,
    new_trial_key,
)
from storages.composite import CompositeFactory
from storages.file import FileFactory, directory_size
from storages.ports import host_port
from storages.process import ServedShared
from storages.zeo.options import (
    ZEO_URI_PORT,
    ZEOOptions,
    address_uri,
    check_reachable,
    uri_address,
)
from storages.zeo.pool import POOL_DISK_BYTES, POOL_SIZE, ZEOPool
from storages.zeo.server import SERVER_FILES, ZEOServer
from storages.zodbstore import ZODBStore

#: Seconds a ZEO client waits for its server (to connect, or to come back
#: before a call fails): a server the suite did not start may restart, one
#: it started and that went away is not coming back, and the run should say
#: so within seconds.
WAIT_TIMEOUT_S = 10.0
STARTED_SERVER_WAIT_TIMEOUT_S = 4.0


@functools.cache
def client_class() -> type:
    """ZEO's ClientStorage, forgetting at each (re)connection the object ids
    it reserved before.

    A client reserves ids in batches (new_oids); a server restarted from its
    files counts on from the highest id committed, below ids it had handed
    out, and hands them out again: a client that kept its batch across the
    restart then gives one id to two new objects (measured: two users of
    one zeoloop process, runzeo SIGKILLed and served again, "A different
    object already has the same oid" in 2 runs of 3; none in 4 with the
    batch dropped).  Ids dropped are never used: a gap, no harm."""
    import ZEO.ClientStorage

    class ClientStorage(ZEO.ClientStorage.ClientStorage):  # type: ignore[misc]
        def notify_connected(self, conn: Any, info: Any) -> None:
            del self._oids[:]
            super().notify_connected(conn, info)

    return ClientStorage


def open_client(
    address: tuple[str, int],
    options: StorageOptions,
    wait_timeout: float = WAIT_TIMEOUT_S,
    storage: str = "1",
    read_only: bool = False,
    server_sync: bool = False,
) -> Any:
    """A ZEO ClientStorage (client_class()) connected to *address*, or
    StorageError.

    *wait_timeout*: seconds the client waits for its first connection, and
    every later call while the server is away, before ClientDisconnected;
    *storage*: the name of the server's storage to use; *server_sync*: each
    transaction's begin waits for the server's invalidations (ZEO's
    server_sync)."""
    from ZEO.Exceptions import ClientDisconnected

    check_reachable(address)
    kwargs: dict[str, Any] = {"wait_timeout": wait_timeout, "storage": storage}
    if read_only:
        kwargs["read_only"] = True
    if server_sync:
        kwargs["server_sync"] = True
    zeo_cache_size = options.get(ZEOOptions).zeo_cache_size
    if zeo_cache_size is not None:
        kwargs["cache_size"] = zeo_cache_size
    try:
        return client_class()(address, **kwargs)
    except ClientDisconnected:
        raise StorageError(
            f"ZEO server at {host_port(*address)} accepted a connection "
            "but did not answer as a ZEO server"
        ) from None


class ZEOStore(ZODBStore):
    """A ZODBStore over a ClientStorage, with the server's counters."""

    #: The server the suite started for this store (stopped when it
    #: closes) or the pool's it took a storage of (not stopped); None with
    #: --zeo-address.
    server: ZEOServer | None = None

    def diagnose(self) -> str | None:
        return None if self.server is None else self.server.exit_note()

    def cache_hits(self) -> int | None:
        cache = getattr(self.db.storage, "_cache", None)
        return None if cache is None else int(cache.getStats()[4])

    def server_round_trip(self) -> None:
        # ZEO's server handles one connection's messages in order, each to
        # its end (a reply's callback included) before the next: the answer
        # to a ping comes after everything sent before it was done.
        self.db.storage.ping()

    def jar_stats(self) -> dict[str, Any]:
        storage = self.db.storage
        stats: dict[str, Any] = {}
        # A call to a server that is gone waits for it to come back: ask
        # only a connected one (the counters are a bonus).
        if storage.is_connected() and (self.server is None or self.server.running):
            try:
                stats["server"] = dict(storage.server_status())
            except Exception:  # it went away meanwhile
                pass
        cache = getattr(storage, "_cache", None)
        if cache is not None:
            adds, added, evicts, evicted, accesses = cache.getStats()
            stats["client_cache"] = {
                "adds": adds,
                "added_bytes": added,
                "evicts": evicts,
                "evicted_bytes": evicted,
                "hits": accesses,
            }
        return stats


class ZEOShared(ServedShared):
    """A runzeo the suite started for other processes: ``zeo://HOST:PORT``.

    kill_server() SIGKILLs runzeo (its FileStorage index is then rebuilt on
    the next start, as after a crash); restart_server() starts it again on
    the same data and port, where ZEO clients reconnect by themselves."""

    def __init__(self, server: ZEOServer) -> None:
        super().__init__(address_uri(server.address), server)


class ZEOFactory(CompositeFactory):
    """ZEO in front of another storage's factory (a composite,
    storages.composite): FileStorage unless *base* says otherwise (zeo+bdb
    fronts bdb).  The base must be ``servable``; its served_section() is
    what runzeo serves, and its hooks (check_existing: the data runzeo
    would open read-write) are this factory's.

    Inside running() (and without --zeo-address) open() takes a fresh
    storage of a ZEOPool's runzeo; outside it, open() starts a runzeo of
    its own on a new database in its directory, stopped when the store
    closes."""

    name = "zeo"
    description = "ZEO client and a runzeo server (FileStorage) over TCP on 127.0.0.1"
    # With the base's (composite.CompositeFactory): zeo+bdb adds bdb's.
    option_groups: ClassVar[tuple[type[OptionGroup], ...]] = (DBOptions, ZEOOptions)
    # Not kept: inside running() a trial's data lives in the pool's
    # directory, not in open()'s (nor anywhere of ours with --zeo-address),
    # so a second open(directory) does not find it.
    keeps_directory = False
    starts_server = True
    uri_schemes = (
        URIScheme(
            "zeo", default_port=ZEO_URI_PORT, read_only=True, query="wait_timeout=10"
        ),
    )

    summary_rows = (
        ("ZEO server: loads", ("server", "loads")),
        ("ZEO server: stores", ("server", "stores")),
        ("ZEO server: commits", ("server", "commits")),
        ("ZEO server: aborts", ("server", "aborts")),
        ("ZEO server: conflicts", ("server", "conflicts")),
        ("ZEO client cache: hits", ("client_cache", "hits")),
        ("ZEO client cache: adds", ("client_cache", "adds")),
        ("ZEO client cache: evictions", ("client_cache", "evicts")),
    )

    #: The factory of the storage runzeo serves.
    base: ClassVar[type[StorageFactory]] = FileFactory
    not_storage = SERVER_FILES  # and the base's

    def __init__(self, options: StorageOptions | None = None) -> None:
        super().__init__(options)
        self._pool: ZEOPool | None = None  # while running()

    def preflight(self) -> None:
        """The base's preflight, and a --zeo-address server must answer."""
        super().preflight()
        address = self.options.get(ZEOOptions).zeo_address
        if address is not None:
            check_reachable(address)

    @classmethod
    def uri_opener(
        cls, uri: str, read_only: bool, wait_timeout: float | None = None
    ) -> Callable[[], Any] | None:
        """A zeo://HOST:PORT URI without query keys through open_client
        (reachability checked first, the client's wait bounded); any other
        (a Unix socket, zodburi's keys) left to zodburi's resolver."""
        address = uri_address(uri)
        if address is None or "?" in uri:
            return None
        timeout = WAIT_TIMEOUT_S if wait_timeout is None else wait_timeout
        options = StorageOptions(ZEOOptions())
        return lambda: open_client(address, options, timeout, read_only=read_only)

    def running(self) -> contextlib.AbstractContextManager[Any]:
        """The base's running(), and inside it a ZEOPool that open() takes
        its storages from, closed on the way out (its server stopped, its
        directory removed); no pool with --zeo-address."""
        return self._running()

    @contextlib.contextmanager
    def _running(self) -> Iterator[None]:
        with self.base_factory.running():
            with self._pool_held():
                yield

    @contextlib.contextmanager
    def _pool_held(self) -> Iterator[None]:
        zeo = self.options.get(ZEOOptions)
        if zeo.zeo_address is not None or self._pool is not None:
            yield  # the user's server; or nested, and the outer pool serves
            return
        # Nothing starts until the first open(): a command that holds
        # running() only to share() (scale) starts no runzeo for it.
        pool = ZEOPool(
            self.base_factory,
            port=zeo.zeo_port,
            size=POOL_SIZE,
            disk_bytes=POOL_DISK_BYTES,
        )
        self._pool = pool
        try:
            yield
        finally:
            self._pool = None
            pool.close()

    @contextlib.contextmanager
    def share(self, directory: Path) -> Iterator[Shared]:
        """runzeo on a new backend database in *directory* (or, with
        --zeo-address, that server: neither fresh nor killable)."""
        zeo = self.options.get(ZEOOptions)
        if zeo.zeo_address is not None:
            yield Shared(address_uri(zeo.zeo_address))
            return
        server = self._start_server(Path(directory))
        try:
            yield ZEOShared(server)
        finally:
            server.stop()

    def _start_server(self, directory: Path) -> ZEOServer:
        """A runzeo serving the backend's section in *directory*, started."""
        backend = self.base_factory
        reason = backend.unavailable()
        if reason:
            raise StorageError(reason)
        section, imports = backend.served_section(directory)
        listen = self.options.get(ListenOptions)
        port = listen.port or self.options.get(ZEOOptions).zeo_port
        server = ZEOServer(
            directory, section, host=listen.host, port=port, imports=imports
        )
        return server.start()

    def open(self, directory: Path) -> Store:
        options = self.options
        zeo = options.get(ZEOOptions)
        if zeo.zeo_address is not None:
            # The server's database is the user's: a trial key, no pack.
            address = zeo.zeo_address
            return ZEOStore(
                self.name,
                lambda: open_client(address, options),
                options,
                trial_key=new_trial_key(),
                packs=options.get(ConfiguredOptions).pack,
            )
        if self._pool is not None:
            return self._open_pooled(self._pool)

        server = self._start_server(Path(directory))
        try:
            store = ZEOStore(
                self.name,
                lambda: open_client(
                    server.address, options, STARTED_SERVER_WAIT_TIMEOUT_S
                ),
                options,
                size=lambda: directory_size(Path(directory), self.not_storage),
                on_close=server.stop,
            )
            store.server = server
            return store
        except BaseException:
            server.stop()
            raise

    def _open_pooled(self, pool: ZEOPool) -> Store:
        """A store on the next fresh storage of *pool*: the server stays up
        when it closes."""
        server, storage, data = pool.take()
        options = self.options
        store = ZEOStore(
            self.name,
            lambda: open_client(
                server.address, options, STARTED_SERVER_WAIT_TIMEOUT_S, storage
            ),
            options,
            size=lambda: directory_size(data, self.not_storage),
        )
        store.server = server
        return store
