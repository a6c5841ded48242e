"""zeo: a real runzeo server process on 127.0.0.1, reached over TCP.

runzeo serves the factory's backend (a ``servable`` factory: FileStorage
for zeo, BDBStorage for zeo+bdb; the backend's served_section()) from a
ZConfig file the suite writes; it runs as ``python -m ZEO.runzeo -C
zeo.conf`` in its own session (Ctrl-C in the terminal reaches the suite,
which stops the server itself), and a client connects once it accepts.

In a run, running() holds a ZEOPool: one runzeo serving a batch of
POOL_SIZE fresh, empty storages, and each trial's open() takes the next
unused one (its own name on the server, its own subdirectory); when the
batch is used up, the next open() stops that server, removes its batch
and starts another, untimed.  Starting runzeo costs several times the
phases of a small trial; the pool pays it once per batch, not per trial.
Outside running() (a test, share() for scale and locust, serve) each
open() starts a runzeo of its own in its directory and stops it when the
store closes.  With --zeo-address the store uses that server instead,
starts nothing and writes only under root[ROOT_KEY].

ZEOServer is reusable: `vfab-bench serve` and the tests use it too.  This
module also declares the ZEO options (ZEOOptions, the one --zeo-address
declaration every subcommand uses) and the files a runzeo writes beside
the data (SERVER_FILES).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

from storages.base import (
    ROOT_KEY,
    DBOptions,
    OptionGroup,
    Shared,
    StorageError,
    StorageFactory,
    StorageOptions,
    Store,
    ZODBStore,
    new_trial_key,
)
from storages.file import FileFactory, directory_size
from storages.options import add_size_option, at_least
from storages.ports import LOCALHOST, check_port_free, free_port

#: Files of a runzeo the suite starts, beside the served storage's: its
#: config, its log and its stderr (not the storage: left out of its size).
SERVER_FILES = ("zeo.conf", "zeo.log", "zeo.stderr")


def parse_address(text: str) -> tuple[str, int]:
    """'HOST:PORT' -> (host, port); StorageError for anything else."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise StorageError(f"bad ZEO address {text!r}: expected HOST:PORT")
    return host.strip("[]"), int(port)


def address_type(text: str) -> tuple[str, int]:
    """An argparse type: parse_address, its error as argparse's."""
    try:
        return parse_address(text)
    except StorageError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_zeo_address_option(
    parser: Any,
    *,
    default: str | None = None,
    help: str | None = None,
    parse: bool = True,
    show_default: bool = True,
) -> None:
    """--zeo-address HOST:PORT on *parser* (an argparse parser or group, or
    locust's): the one declaration every command taking it uses.  With
    *parse* the value is a (host, port) pair, else the text as typed (for
    parsers whose values also come from a form)."""
    kwargs: dict[str, Any] = {"type": address_type} if parse else {}
    if default is not None and show_default:
        help = f"{help} (default: {default})" if help else f"default: {default}"
    parser.add_argument(
        "--zeo-address",
        default=default,
        metavar="HOST:PORT",
        help=help or "a running ZEO server",
        **kwargs,
    )


def port_number(text: str) -> int:
    """An argparse type: a TCP port, or 0 for a free one."""
    value = at_least(0)(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"not a port number: {value}")
    return value


@dataclasses.dataclass(frozen=True)
class ZEOOptions(OptionGroup):
    """Options of the ZEO storages (zeo, zeo+bdb).

    zeo_address: (host, port) of an existing ZEO server to use instead of
        starting one (None: start runzeo on 127.0.0.1: once per batch of
        trials in a run, see ZEOPool).
    zeo_port: port for the runzeo the suite starts (0: a free port).
    zeo_cache_size: ZEO client cache, in bytes (None: ZEO's default, 20 MB).
    """

    zeo_address: tuple[str, int] | None = None
    zeo_port: int = 0
    zeo_cache_size: int | None = None

    @classmethod
    def add_arguments(cls, group: argparse._ArgumentGroup) -> None:
        add_zeo_address_option(
            group,
            help="use this running ZEO server instead of starting runzeo; "
            f"the suite writes only under root[{ROOT_KEY!r}]",
        )
        group.add_argument(
            "--zeo-port",
            type=port_number,
            default=0,
            metavar="N",
            help="port for the runzeo the suite starts on 127.0.0.1 "
            "(default: a free port)",
        )
        add_size_option(
            group,
            "--zeo-cache-size",
            "BYTES",
            "ZEO client cache size in bytes (default: ZEO's, 20 MB)",
        )

    def to_json(self) -> dict[str, Any]:
        """The options as JSON values (an address as "HOST:PORT")."""
        options = dataclasses.asdict(self)
        if self.zeo_address is not None:
            host, port = self.zeo_address
            options["zeo_address"] = f"{host}:{port}"
        return options


def check_reachable(address: tuple[str, int], timeout: float = 3.0) -> None:
    """StorageError unless a TCP connection to *address* succeeds."""
    try:
        with socket.create_connection(address, timeout=timeout):
            pass
    except OSError as e:
        reason = e.strerror or str(e) or type(e).__name__
        raise StorageError(
            f"cannot reach ZEO server at {address[0]}:{address[1]}: {reason}"
        ) from None


def _die_with_parent() -> None:  # pragma: no cover - runs in the child
    """Ask Linux to SIGTERM the server if the suite dies without cleaning up
    (SIGKILL); elsewhere a no-op."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


class ZEOServer:
    """One runzeo child process.

    *storage_sections* is the ZConfig text of the served storage (a
    served_section(), named "1"), or several such texts, each naming its
    storage differently (renamed_section()); clients ask for a storage by
    that name.  *imports* are the ZConfig %import lines they need (e.g.
    ["storages.bdb"]).  Its config, log and stderr (SERVER_FILES) go in
    *directory*.  start() returns once a client can connect; stop() sends
    SIGTERM, then SIGKILL after a grace period.  Use as a context manager.
    """

    def __init__(
        self,
        directory: Path,
        storage_sections: str | Sequence[str],
        host: str = LOCALHOST,
        port: int = 0,
        imports: tuple[str, ...] = (),
    ) -> None:
        self.directory = Path(directory)
        if isinstance(storage_sections, str):
            storage_sections = (storage_sections,)
        self.storage_sections = tuple(storage_sections)
        self.host = host
        self.requested_port = port
        self.port = port
        self.imports = imports
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path = self.directory / "zeo.log"

    @property
    def address(self) -> tuple[str, int]:
        return self.host, self.port

    def config_text(self) -> str:
        lines = [f"%import {name}" for name in self.imports]
        lines += [
            "<zeo>",
            f"  address {self.host}:{self.port}",
            "</zeo>",
            *self.storage_sections,
            "<eventlog>",
            "  level INFO",
            "  <logfile>",
            f"    path {self.log_path}",
            "  </logfile>",
            "</eventlog>",
        ]
        return "\n".join(lines) + "\n"

    def start(self, timeout: float = 30.0) -> ZEOServer:
        # A port the user named and that is busy is their mistake; a port we
        # picked and lost to a race is ours, so pick another and retry.
        for _attempt in range(3):
            if self.requested_port:
                check_port_free(self.host, self.requested_port)
                self.port = self.requested_port
            else:
                self.port = free_port(self.host)
            if self._spawn(timeout):
                return self
            if self.requested_port:
                break
        raise StorageError(
            f"runzeo did not start on {self.host}:{self.port}: {self._last_log_line()}"
        )

    def _spawn(self, timeout: float) -> bool:
        config = self.directory / "zeo.conf"
        config.write_text(self.config_text())
        env = dict(os.environ)
        # The served storage may live in this project (storages.bdb).
        project = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (project, env.get("PYTHONPATH", "")) if p
        )
        # The child keeps its own descriptor of zeo.stderr; ours closes here.
        with open(self.directory / "zeo.stderr", "wb") as stderr:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "ZEO.runzeo", "-C", str(config)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                start_new_session=True,
                preexec_fn=_die_with_parent if sys.platform == "linux" else None,
                env=env,
            )
        return self._wait_ready(timeout)

    def _wait_ready(self, timeout: float) -> bool:
        assert self.process is not None
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    self.process = None
                    return False
                try:
                    with socket.create_connection(self.address, timeout=0.5):
                        return True
                except OSError:
                    time.sleep(0.05)
        except BaseException:
            self.stop()
            raise
        self.stop()
        raise StorageError(
            f"runzeo did not accept connections on {self.host}:{self.port} "
            f"within {timeout:.0f} s"
        )

    def _last_log_line(self) -> str:
        for name in ("zeo.stderr", "zeo.log"):
            try:
                lines = (self.directory / name).read_text(errors="replace").splitlines()
            except OSError:
                continue
            lines = [ln for ln in lines if ln.strip()]
            if lines:
                return lines[-1].strip()
        return "no output"

    def stop(self, grace: float = 10.0) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def exit_note(self) -> str | None:
        """How the server ended if it exited on its own ("runzeo exited with
        status 1", "runzeo was killed by SIGKILL"), else None."""
        if self.process is None:
            return None
        try:  # asked after a failure: a dying server may need a moment
            code = self.process.wait(timeout=0.5)
        except subprocess.TimeoutExpired:
            return None
        if code < 0:
            return f"runzeo was killed by {signal.Signals(-code).name}"
        return f"runzeo exited with status {code}: {self._last_log_line()}"

    def __enter__(self) -> ZEOServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


_OPENING_TAG_NAMED_1 = re.compile(r"^(\s*<[^\s<>/]+\s+)1(\s*>)", re.MULTILINE)


def renamed_section(section: str, name: str) -> str:
    """*section*, a served_section() (ZConfig text whose first opening tag
    names its storage "1": ``<filestorage 1>``), with that tag naming it
    *name* instead, so that one runzeo can serve several; the rest of the
    text is left as it is.  StorageError if no opening tag names "1"."""
    renamed, found = _OPENING_TAG_NAMED_1.subn(
        lambda m: f"{m.group(1)}{name}{m.group(2)}", section, count=1
    )
    if not found:
        first = next((ln.strip() for ln in section.splitlines() if ln.strip()), "")
        raise StorageError(
            f"cannot serve {first!r} among others: a served section opens "
            "with a tag naming its storage 1"
        )
    return renamed


def bytes_on_disk(directory: Path) -> int:
    """Bytes the files below *directory* occupy on disk (allocated blocks:
    a sparse or preallocated file counts what it holds, not its length)."""
    total = 0
    for dirpath, _, names in os.walk(directory):
        for n in names:
            try:
                total += os.stat(os.path.join(dirpath, n)).st_blocks * 512
            except FileNotFoundError:
                pass
    return total


#: Storages one runzeo serves inside ZEOFactory.running(), each a fresh,
#: empty one for one trial.  Starting and stopping runzeo costs about
#: 0.35 s, more than twice the phases of a small trial; one start per 16
#: trials makes that 0.02-0.05 s a trial, while a batch stays quick to start
#: (16 empty FileStorages as quickly as one, 16 Berkeley DB environments in
#: 0.6 s rather than 0.3 s) and cheap enough to hold: 16 FileStorages next
#: to nothing, 16 environments about 280 MB on disk and as much in runzeo's
#: memory (their regions, about 17 MB each).  A finished trial's files stay
#: until its batch ends (see also POOL_DISK_BYTES).
POOL_SIZE = 16

#: Bytes on disk past which a batch takes no more trials: the next one
#: starts a new batch even if storages are left.  Without it a batch of
#: large trials (a large data set's Data.fs is about 20 MB, an xlarge one's
#: 350 MB, twice that after a pack) would keep up to POOL_SIZE of them; so
#: a run needs at most about this much disk more than one trial does.
POOL_DISK_BYTES = 512 * 2**20


class ZEOPool:
    """One runzeo at a time serving a batch of fresh, empty storages of
    *backend* (a ``servable`` factory), one per trial: ZEOFactory.running()
    holds one.

    take() gives the next unused storage of the batch: (its server, its
    name, its directory).  The first take() makes the pool's directory
    (tempfile) and starts the first batch; a take() finding the batch used
    up (*size* storages), holding *disk_bytes* or more, or its server gone
    (killed) stops that server, removes that batch's directory and starts
    a new batch, before giving a storage of it.  A batch is a directory
    ``batch-N`` of the pool's, its storages in subdirectories "1" to
    "*size*", which are also their names on the server; its runzeo's files
    (SERVER_FILES) sit beside them.  close() stops the server and removes
    everything; the pool can be used again after it.

    Limits: a finished trial's files stay on disk until its batch ends.
    The server dies with the thread that started it (PR_SET_PDEATHSIG
    follows a thread, not the process): call take() from the thread that
    holds the pool, not from a short-lived worker.
    """

    def __init__(
        self,
        backend: StorageFactory,
        port: int = 0,
        size: int = POOL_SIZE,
        disk_bytes: int = POOL_DISK_BYTES,
    ) -> None:
        self.backend = backend
        self.port = port
        self.size = size
        self.disk_bytes = disk_bytes
        #: The pool's directory, made by the first take().
        self.directory: Path | None = None
        #: The current batch's server and directory.
        self.server: ZEOServer | None = None
        self.batch: Path | None = None
        self._batches = 0  # batches started, for their directories' names
        self._taken = 0  # storages of the current batch given out

    def take(self) -> tuple[ZEOServer, str, Path]:
        """(server, storage name, storage directory) of a storage no one has
        used, starting a new batch first when this one will not do."""
        if self._batch_over():
            self._end_batch()
            self._start_batch()
        assert self.server is not None and self.batch is not None
        self._taken += 1
        name = str(self._taken)
        return self.server, name, self.batch / name

    def _batch_over(self) -> bool:
        if self.server is None or self.batch is None or not self.server.running:
            return True
        if self._taken >= self.size:
            return True
        # A batch none of whose storages was used is never over for its size
        # (a limit below a fresh batch's own files would loop).
        return self._taken > 0 and bytes_on_disk(self.batch) >= self.disk_bytes

    def _start_batch(self) -> None:
        reason = self.backend.unavailable()
        if reason:
            raise StorageError(reason)
        if self.directory is None:
            self.directory = Path(tempfile.mkdtemp(prefix="vfab-zeo-pool-"))
        self._batches += 1
        batch = self.directory / f"batch-{self._batches}"
        batch.mkdir()
        self.batch, self._taken = batch, 0
        sections = []
        imports: tuple[str, ...] = ()
        for i in range(1, self.size + 1):
            data = batch / str(i)
            data.mkdir()
            section, imports = self.backend.served_section(data)
            sections.append(renamed_section(section, str(i)))
        # Held before it starts: whatever happens next, _end_batch stops it.
        self.server = ZEOServer(batch, sections, port=self.port, imports=imports)
        self.server.start()

    def _end_batch(self) -> None:
        server, self.server = self.server, None
        batch, self.batch = self.batch, None
        try:
            if server is not None:
                server.stop()
        finally:
            if batch is not None:
                shutil.rmtree(batch, ignore_errors=True)

    def close(self) -> None:
        """Stop the server and remove the pool's directory."""
        directory, self.directory = self.directory, None
        try:
            self._end_batch()
        finally:
            if directory is not None:
                shutil.rmtree(directory, ignore_errors=True)


#: Seconds a ZEO client waits for its server (to connect, or to come back
#: before a call fails): a server the suite did not start may restart, one
#: it started and that went away is not coming back, and the run should say
#: so within seconds.
WAIT_TIMEOUT_S = 10.0
STARTED_SERVER_WAIT_TIMEOUT_S = 4.0


def open_client(
    address: tuple[str, int],
    options: StorageOptions,
    wait_timeout: float = WAIT_TIMEOUT_S,
    storage: str = "1",
) -> Any:
    """A ZEO ClientStorage connected to *address*, or StorageError.

    *wait_timeout*: seconds the client waits for its first connection, and
    every later call while the server is away, before ClientDisconnected;
    *storage*: the name of the server's storage to use."""
    import ZEO.ClientStorage
    from ZEO.Exceptions import ClientDisconnected

    check_reachable(address)
    kwargs: dict[str, Any] = {"wait_timeout": wait_timeout, "storage": storage}
    zeo_cache_size = options.get(ZEOOptions).zeo_cache_size
    if zeo_cache_size is not None:
        kwargs["cache_size"] = zeo_cache_size
    try:
        return ZEO.ClientStorage.ClientStorage(address, **kwargs)
    except ClientDisconnected:
        raise StorageError(
            f"ZEO server at {address[0]}:{address[1]} accepted a connection "
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


class ZEOShared(Shared):
    """A runzeo the suite started for other processes: ``zeo://HOST:PORT``.

    kill_server() SIGKILLs runzeo (its FileStorage index is then rebuilt on
    the next start, as after a crash); restart_server() starts it again on
    the same data and port, where ZEO clients reconnect by themselves."""

    can_kill = True

    def __init__(self, server: ZEOServer) -> None:
        host, port = server.address
        super().__init__(f"zeo://{host}:{port}")
        self.server = server

    def server_pids(self) -> list[int]:
        process = self.server.process
        return [process.pid] if process is not None else []

    def kill_server(self) -> None:
        process, self.server.process = self.server.process, None
        if process is not None and process.poll() is None:
            process.kill()
            process.wait()

    def restart_server(self) -> None:
        # The same port, so that clients find it again.
        self.server.requested_port = self.server.port
        self.server.start()

    @property
    def server_running(self) -> bool:
        return self.server.running


class ZEOFactory(StorageFactory):
    """ZEO in front of another storage's factory: FileStorage unless
    *backend* says otherwise (zeo+bdb fronts bdb).  The backend must be
    ``servable``; its served_section() is what runzeo serves.

    Inside running() (and without --zeo-address) open() takes a fresh
    storage of a ZEOPool's runzeo; outside it, open() starts a runzeo of
    its own on a new database in its directory, stopped when the store
    closes."""

    name = "zeo"
    description = "ZEO client and a runzeo server (FileStorage) over TCP on 127.0.0.1"
    option_groups: ClassVar[tuple[type[OptionGroup], ...]] = (DBOptions, ZEOOptions)
    # Not kept: inside running() a trial's data lives in the pool's
    # directory, not in open()'s (nor anywhere of ours with --zeo-address),
    # so a second open(directory) does not find it.
    keeps_directory = False
    starts_server = True
    shared = True

    #: The factory of the storage runzeo serves.
    backend: type[StorageFactory] = FileFactory
    not_storage = FileFactory.not_storage + SERVER_FILES

    def __init__(self, options: StorageOptions | None = None) -> None:
        super().__init__(options)
        self._pool: ZEOPool | None = None  # while running()

    def unavailable(self) -> str | None:
        return self.backend(self.options).unavailable()

    def running(self) -> contextlib.AbstractContextManager[Any]:
        """A ZEOPool that open() takes its storages from, closed on the way
        out (its server stopped, its directory removed); nothing with
        --zeo-address."""
        return self._running()

    @contextlib.contextmanager
    def _running(self) -> Iterator[None]:
        zeo = self.options.get(ZEOOptions)
        if zeo.zeo_address is not None or self._pool is not None:
            yield  # the user's server; or nested, and the outer pool serves
            return
        # Nothing starts until the first open(): a command that holds
        # running() only to share() (scale) starts no runzeo for it.
        pool = ZEOPool(
            self.backend(self.options),
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
            host, port = zeo.zeo_address
            yield Shared(f"zeo://{host}:{port}")
            return
        server = self._start_server(Path(directory))
        try:
            yield ZEOShared(server)
        finally:
            server.stop()

    def _start_server(self, directory: Path) -> ZEOServer:
        """A runzeo serving the backend's section in *directory*, started."""
        backend = self.backend(self.options)
        reason = backend.unavailable()
        if reason:
            raise StorageError(reason)
        section, imports = backend.served_section(directory)
        port = self.options.get(ZEOOptions).zeo_port
        server = ZEOServer(directory, section, port=port, imports=imports)
        return server.start()

    def open(self, directory: Path) -> Store:
        options = self.options
        zeo = options.get(ZEOOptions)
        if zeo.zeo_address is not None:
            # The server's database is the user's: a trial key, no pack.
            from storages.configured import ConfiguredOptions

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
