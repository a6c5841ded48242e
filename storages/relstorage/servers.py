"""What PostgreSQL and MariaDB servers the suite starts have in common.

A ServerProcess is one database server run as a direct child of the suite,
in a directory of its own, listening on 127.0.0.1 on a free port.  It is
shaped like storages.zeo.ZEOServer: start() returns once the server
answers, stop() shuts it down, ``running`` says whether it still is, and
the object is a context manager.  The server runs in its own session
(Ctrl-C in a terminal reaches only the suite, which stops the server
itself) and with PR_SET_PDEATHSIG, so that it shuts down when the suite
dies without cleaning up (SIGTERM or SIGKILL of the suite).

A TrialDatabases hands out one fresh database per trial and drops only the
databases it created itself (it keeps the list).
"""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from storages.base import StorageError
from storages.ports import LOCALHOST, check_port_free, free_port

_S = TypeVar("_S", bound="ServerProcess")
_D = TypeVar("_D", bound="TrialDatabases")


def die_with_parent(sig: int) -> Callable[[], None] | None:
    """A preexec_fn asking Linux to send *sig* to the child when the suite
    dies (None off Linux).  It runs after Popen's user= switch: a
    credential change clears the parent-death signal, so it must come last;
    and ctypes is loaded here, in the parent, because the child, already
    the server's user, may not be allowed to read Python's files."""
    if sys.platform != "linux":
        return None
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError, ImportError):
        return None
    PR_SET_PDEATHSIG = 1

    def preexec() -> None:  # pragma: no cover - runs in the child
        prctl(PR_SET_PDEATHSIG, sig)

    return preexec


def last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else "no output"


def error_line(*outputs: str) -> str:
    """The line of a tool's output that says what went wrong: the first
    one with "error", "fatal" or "denied" in it (initdb goes on talking
    after its error), else the last line."""
    for text in outputs:
        for line in text.splitlines():
            lowered = line.lower()
            if any(word in lowered for word in ("error", "fatal", "denied")):
                return line.strip()
    return last_line("\n".join(outputs))


def run_tool(argv: Sequence[str], what: str, timeout: float = 120.0) -> float:
    """Run one command line to completion; its seconds, or StorageError with
    the last line it printed."""
    started = time.perf_counter()
    try:
        done = subprocess.run(
            list(argv),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except FileNotFoundError:
        raise StorageError(f"{what}: {argv[0]} not found") from None
    except subprocess.TimeoutExpired:
        raise StorageError(f"{what}: no answer within {timeout:.0f} s") from None
    if done.returncode:
        raise StorageError(f"{what} failed: {error_line(done.stderr, done.stdout)}")
    return time.perf_counter() - started


class ServerProcess:
    """One database server, a child of this process; subclasses say how to
    initialize its data directory, start it, ask whether it is ready and
    shut it down.

    *directory* holds the data directory, the socket directory and the log;
    by default a fresh one under the system's temporary directory, removed
    by stop().  A directory given by the caller is kept.  With *port* 0 a
    free port is picked (and another one if the first was lost to a race);
    a busy port the caller named is a StorageError.

    Limits: Linux sends the parent-death signal when the *thread* that
    started the server ends, so start servers from the main thread (or one
    that lives as long as they do).
    """

    #: For messages: "PostgreSQL", "MariaDB".
    product = "server"
    #: Signal Linux sends the server if the suite dies.
    death_signal: int = signal.SIGTERM
    #: Seconds of the last steps, for reports and the lead's notes.
    timings: dict[str, float]

    def __init__(
        self,
        directory: Path | str | None = None,
        host: str = LOCALHOST,
        port: int = 0,
    ) -> None:
        self.given_directory = Path(directory) if directory is not None else None
        self.directory: Path | None = self.given_directory
        self.host = host
        self.requested_port = port
        self.port = port
        self.process: subprocess.Popen[bytes] | None = None
        self.timings = {}
        self._initialized = False
        #: Numbers for vfab_trial_N, for every TrialDatabases of this server.
        self.database_counter = itertools.count(1)

    # -- what subclasses provide --------------------------------------------

    def _initialize(self) -> None:
        """Create the data directory (initdb, mariadb-install-db)."""
        raise NotImplementedError

    def _command(self) -> list[str]:
        """The server's command line."""
        raise NotImplementedError

    def _popen_user(self) -> dict[str, Any]:
        """Popen keywords running the server as its owner."""
        return {}

    def _ready(self) -> bool:
        """True once the server accepts connections."""
        raise NotImplementedError

    def _shutdown(self, process: subprocess.Popen[bytes]) -> None:
        """Ask the server (*process*) to stop; stop() waits for it."""
        raise NotImplementedError

    def _after_start(self) -> None:
        """Run once the server is ready (create users, ...)."""

    @property
    def log_path(self) -> Path:
        assert self.directory is not None
        return self.directory / "server.log"

    # -- the shared life cycle ------------------------------------------------

    @property
    def address(self) -> tuple[str, int]:
        return self.host, self.port

    def start(self, timeout: float = 60.0) -> ServerProcess:
        if self.running:
            return self
        try:
            if self.requested_port:  # before the slow initdb
                check_port_free(self.host, self.requested_port)
            if self.directory is None:
                self.directory = Path(
                    tempfile.mkdtemp(prefix=f"vfab-{self.product.lower()}-")
                )
            else:
                self._check_directory(self.directory)
            if not self._initialized:
                started = time.perf_counter()
                self._initialize()
                self.timings["initialize"] = time.perf_counter() - started
                self._initialized = True
            for _attempt in range(3):
                if self.requested_port:
                    check_port_free(self.host, self.requested_port)
                    self.port = self.requested_port
                else:
                    self.port = free_port(self.host)
                started = time.perf_counter()
                if self._spawn(timeout):
                    self.timings["start"] = time.perf_counter() - started
                    self._after_start()
                    return self
                if self.requested_port:
                    break
            raise StorageError(
                f"{self.product} did not start on {self.host}:{self.port}: "
                f"{self.last_log_line()}"
            )
        except BaseException:
            self.stop()
            raise

    def _check_directory(self, directory: Path) -> None:
        if not directory.is_dir():
            try:
                directory.mkdir(parents=True)
            except OSError as e:
                raise StorageError(
                    f"cannot create {self.product} directory {directory}: {e.strerror}"
                ) from None
        if not os.access(directory, os.W_OK | os.X_OK):
            raise StorageError(f"{self.product} directory {directory} is not writable")

    def _spawn(self, timeout: float) -> bool:
        assert self.directory is not None
        with open(self.log_path, "ab") as log:
            try:
                self.process = subprocess.Popen(
                    self._command(),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    preexec_fn=die_with_parent(self.death_signal),
                    **self._popen_user(),
                )
            except FileNotFoundError as e:
                raise StorageError(
                    f"{self.product} server binary not found: {e.filename}"
                ) from None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.process = None
                return False
            if self._ready():
                return True
            time.sleep(0.05)
        self.stop()
        raise StorageError(
            f"{self.product} did not answer on {self.host}:{self.port} "
            f"within {timeout:.0f} s: {self.last_log_line()}"
        )

    def last_log_line(self) -> str:
        try:
            return last_line(self.log_path.read_text(errors="replace"))
        except (OSError, AssertionError):
            return "no output"

    def stop(self, grace: float = 30.0) -> None:
        """Shut the server down (gracefully, then SIGKILL after *grace*)
        and remove the directory unless the caller gave it."""
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            started = time.perf_counter()
            try:
                self._shutdown(process)
            except StorageError:
                process.send_signal(self.death_signal)
            try:
                process.wait(grace)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            self.timings["stop"] = time.perf_counter() - started
        if self.given_directory is None and self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)
            self.directory = None
            self._initialized = False

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def __enter__(self: _S) -> _S:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class TrialDatabases:
    """Fresh databases on one server, one per trial, dropped after.

    Only databases this object created are ever dropped (``created`` keeps
    them), and every name starts with *prefix*.  On a server the suite
    started the prefix is ``vfab_trial_``; on a user's server (a DSN) it
    gets a random part, ``vfab_<8 hex>_``, so that two runs never share a
    name, and a name that already exists is refused, never reused.
    Subclasses implement _execute(sql) as the server's administrator.
    """

    product = "server"

    def __init__(
        self, prefix: str = "vfab_trial_", counter: Iterator[int] | None = None
    ) -> None:
        self.prefix = prefix
        self.created: list[str] = []
        # Shared by everything handing out names on one server (see
        # ServerProcess.database_counter): a database a failed trial could
        # not drop never blocks the next one.
        self._counter = counter if counter is not None else itertools.count(1)
        self.timings: dict[str, list[float]] = {"create": [], "drop": []}

    @staticmethod
    def unique_prefix() -> str:
        return f"vfab_{uuid.uuid4().hex[:8]}_"

    #: Top-level modules of the drivers whose errors are the server's own
    #: words, reported as one StorageError line.
    driver_modules: tuple[str, ...] = ()
    _conn: Any = None

    @property
    def where(self) -> str:
        """HOST:PORT of the server, for messages."""
        raise NotImplementedError

    @property
    def description(self) -> str:
        """One line for the user: which server, and which names are ours."""
        return (
            f"{self.product} at {self.where}: "
            f"the suite creates and drops only databases named {self.prefix}*"
        )

    def _admin_connection(self) -> Any:
        """A new DB-API connection as the server's administrator."""
        raise NotImplementedError

    def _error_text(self, error: BaseException) -> str:
        lines = [ln.strip() for ln in str(error).splitlines() if ln.strip()]
        return lines[0] if lines else type(error).__name__

    def connect(self) -> None:
        """Check now that the server is reachable (StorageError if not)."""
        if self._conn is None:
            self._conn = self._admin_connection()

    def _execute(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        """Run *sql* as the server's administrator; its rows."""
        self.connect()
        cursor = self._conn.cursor()
        try:
            cursor.execute(sql, params or None)
            return list(cursor.fetchall()) if cursor.description else []
        except Exception as e:
            # A driver's error: one line, the server's own words.
            if type(e).__module__.split(".")[0] in self.driver_modules:
                raise StorageError(f"{self.product}: {self._error_text(e)}") from None
            raise
        finally:
            cursor.close()

    #: A query with one parameter, the name, that has a row if a database
    #: of that name exists.
    exists_sql = ""

    def _exists(self, name: str) -> bool:
        return bool(self._execute(self.exists_sql, (name,)))

    def _quote(self, name: str) -> str:
        raise NotImplementedError

    def _drop_statement(self, name: str) -> str:
        return f"DROP DATABASE IF EXISTS {self._quote(name)}"

    def create(self, label: str | None = None) -> str:
        """Create a database named prefix + *label* (by default a counter)
        and return its name; StorageError if it exists already."""
        name = self.prefix + (label or str(next(self._counter)))
        if not name.replace("_", "").isalnum():
            raise StorageError(f"bad database name {name!r}: letters, digits and _")
        started = time.perf_counter()
        if self._exists(name):
            raise StorageError(
                f"{self.product} database {name} already exists and was not "
                "created by this run; drop it or choose another prefix"
            )
        self._execute(f"CREATE DATABASE {self._quote(name)}")
        self.created.append(name)
        self.timings["create"].append(time.perf_counter() - started)
        return name

    def drop(self, name: str) -> None:
        """Drop *name*, which this object must have created."""
        if name not in self.created:
            raise StorageError(
                f"refusing to drop {self.product} database {name}: "
                "not created by this run"
            )
        started = time.perf_counter()
        self._execute(self._drop_statement(name))
        self.created.remove(name)
        self.timings["drop"].append(time.perf_counter() - started)

    def drop_all(self) -> None:
        for name in list(self.created):
            self.drop(name)

    def __enter__(self: _D) -> _D:
        return self

    def __exit__(self, *exc: object) -> None:
        self.drop_all()
