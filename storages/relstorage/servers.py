"""What PostgreSQL and MariaDB servers the suite starts have in common.

A ServerProcess is one database server run as a direct child of the suite,
in a directory of its own, listening on 127.0.0.1 on a free port.  Its
life cycle is storages.process's, as runzeo's (storages.zeo.ZEOServer):
start() returns once the server answers, stop() shuts it down, ``running``
says whether it still is, and the object is a context manager.  The server
runs in its own session (Ctrl-C in a terminal reaches only the suite, which
stops the server itself) and with PR_SET_PDEATHSIG, so that it shuts down
when the suite dies without cleaning up (SIGTERM or SIGKILL of the suite).

A TrialDatabases hands out one fresh database per trial and drops only the
databases it created itself (it keeps the list).
"""

from __future__ import annotations

import itertools
import os
import pwd
import shutil
import stat
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import storages.process as process
from storages.base import StorageError
from storages.ports import LOCALHOST
from storages.process import last_line

_D = TypeVar("_D", bound="TrialDatabases")


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


#: The longest path of a unix socket (sun_path: 108 bytes with its NUL).
SOCKET_PATH_MAX = 107


def short_directory(longest_name: int, prefix: str) -> Path | None:
    """A fresh directory in which a name of *longest_name* characters makes
    a path a unix socket can have: in the temporary directory when its path
    is short enough, else in /tmp, /var/tmp or /dev/shm (a long TMPDIR, as
    pytest's are, must not fail a server); None when none will do."""
    for where in (tempfile.gettempdir(), "/tmp", "/var/tmp", "/dev/shm"):
        # mkdtemp's name: the prefix and 8 random characters
        if len(os.fsencode(where)) + 1 + len(prefix) + 8 + longest_name > (
            SOCKET_PATH_MAX
        ):
            continue
        try:
            return Path(tempfile.mkdtemp(prefix=prefix, dir=where))
        except OSError:
            continue
    return None


def server_user(name: str, product: str) -> pwd.struct_passwd:
    """The account *product*'s programs run as; StorageError when missing."""
    try:
        return pwd.getpwnam(name)
    except KeyError:
        raise StorageError(
            f"running as root and there is no {name!r} user to run {product} "
            f"({product} refuses root)"
        ) from None


def blocking(path: Path, user: pwd.struct_passwd) -> Path | None:
    """The first of *path* and its parents that *user* cannot enter (its
    mode bits for that user lack x), or None: it can reach *path*."""
    import grp

    groups = {user.pw_gid} | {
        g.gr_gid for g in grp.getgrall() if user.pw_name in g.gr_mem
    }
    real = Path(os.path.realpath(path))
    for where in (real, *real.parents):
        try:
            st = where.stat()
        except FileNotFoundError:
            continue  # made later, by the owner of its parent
        except OSError:
            return where
        if st.st_uid == user.pw_uid:
            bit = stat.S_IXUSR
        elif st.st_gid in groups:
            bit = stat.S_IXGRP
        else:
            bit = stat.S_IXOTH
        if not st.st_mode & bit:
            return where
    return None


def unreachable(path: Path, user: pwd.struct_passwd, product: str, what: str) -> str:
    """The line for a directory the server's user cannot reach."""
    blocker = blocking(path, user) or path
    try:
        mode = f" (mode {stat.S_IMODE(blocker.stat().st_mode):o})"
    except OSError:
        mode = ""
    return (
        f"{product} runs as the user {user.pw_name} ({product} refuses root), "
        f"who cannot enter {blocker}{mode}, on the way to {what} {path}: set "
        f"TMPDIR to a directory {user.pw_name} can reach, such as /tmp, or let "
        f"it in (chmod o+x {blocker})"
    )


class ServerProcess(process.ServerProcess):
    """One database server (storages.process's life cycle); subclasses say
    how to initialize its data directory, start it, ask whether it is ready
    and shut it down.

    *directory* holds the data directory, the socket directory and the log;
    by default a fresh one under the system's temporary directory, removed
    by stop().  A directory given by the caller is kept.  With *port* 0 a
    free port is picked (and another one if the first was lost to a race);
    a busy port the caller named is a StorageError.
    """

    def __init__(
        self,
        directory: Path | str | None = None,
        host: str = LOCALHOST,
        port: int = 0,
    ) -> None:
        super().__init__(host, port)
        self.given_directory = Path(directory) if directory is not None else None
        self.directory: Path | None = self.given_directory
        self._initialized = False
        #: Where the server's unix socket lives: in *directory* when the
        #: socket's path fits there, else a short directory of its own.
        self.socket_home: Path | None = None
        #: Numbers for vfab_trial_N, for every TrialDatabases of this server.
        self.database_counter = itertools.count(1)

    # -- what subclasses provide --------------------------------------------

    def _initialize(self) -> None:
        """Create the data directory (initdb, mariadb-install-db)."""
        raise NotImplementedError

    #: The longest name the server gives a unix socket in its socket
    #: directory, with the slash before it.
    socket_name = 0

    def _popen_user(self) -> dict[str, Any]:
        """Popen keywords running the server as its owner."""
        return {}

    @property
    def log_path(self) -> Path:
        assert self.directory is not None
        return self.directory / "server.log"

    # -- storages.process's hooks ---------------------------------------------

    #: The account the server's programs run as when this process is root
    #: (None: this process's own, root or not).
    root_runs_as: str | None = None

    def _server_user(self) -> pwd.struct_passwd | None:
        """The user the server's programs run as, when not this process's
        (None: this process's own)."""
        if self.root_runs_as is None or os.geteuid() != 0:
            return None
        return server_user(self.root_runs_as, self.product)

    def _new_directory(self) -> Path:
        """A fresh directory for the server's files (the caller gave none):
        in the temporary directory, or where that lies under a directory
        the server's user cannot enter (`mktemp -d` makes them 0700), in
        /tmp, /var/tmp or /dev/shm; StorageError saying what to do when
        none will do."""
        prefix = f"vfab-{self.product.lower()}-"
        user = self._server_user()
        if user is None:
            return Path(tempfile.mkdtemp(prefix=prefix))
        tmp = tempfile.gettempdir()
        for where in dict.fromkeys((tmp, "/tmp", "/var/tmp", "/dev/shm")):
            if os.path.isdir(where) and blocking(Path(where), user) is None:
                try:
                    return Path(tempfile.mkdtemp(prefix=prefix, dir=where))
                except OSError:
                    continue
        raise StorageError(
            unreachable(Path(tmp), user, self.product, "the temporary directory")
        )

    def _prepare(self) -> None:
        if self.directory is None:
            self.directory = self._new_directory()
        else:
            self._check_directory(self.directory)
        if self.socket_home is None:
            self.socket_home = self._socket_home(self.directory)
        if not self._initialized:
            started = time.perf_counter()
            self._initialize()
            self.timings["initialize"] = time.perf_counter() - started
            self._initialized = True

    def _output(self) -> tuple[Path, str, bool]:
        return self.log_path, "ab", True

    def _popen_kwargs(self) -> dict[str, Any]:
        return self._popen_user()

    def _socket_home(self, directory: Path) -> Path:
        inside = directory / "socket"
        if len(os.fsencode(inside)) + self.socket_name <= SOCKET_PATH_MAX:
            inside.mkdir(mode=0o700, exist_ok=True)
            return inside
        short = short_directory(self.socket_name, f"vfab-{self.product[:2].lower()}-")
        if short is None:
            raise StorageError(
                f"{self.product}: its unix socket's path would exceed "
                f"{SOCKET_PATH_MAX} bytes in {directory}, and no temporary "
                "directory with a shorter path is writable"
            )
        return short

    def _after_stop(self) -> None:
        """Remove the directory unless the caller gave it, and the socket's
        own short one."""
        home, self.socket_home = self.socket_home, None
        if home is not None and self.directory not in home.parents:
            shutil.rmtree(home, ignore_errors=True)
        if self.given_directory is None and self.directory is not None:
            # Interrupted during initdb, its own children (postgres --boot)
            # may still write here for a moment after it was killed: a
            # single rmtree then left the directory behind.
            for _attempt in range(50):
                shutil.rmtree(self.directory, ignore_errors=True)
                if not self.directory.exists():
                    break
                time.sleep(0.1)
            self.directory = None
            self._initialized = False

    def _check_directory(self, directory: Path) -> None:
        user = self._server_user()  # before anything is made in it
        if user is not None and blocking(directory, user) is not None:
            raise StorageError(
                unreachable(directory, user, self.product, "the directory")
            )
        if not directory.is_dir():
            try:
                directory.mkdir(parents=True)
            except OSError as e:
                raise StorageError(
                    f"cannot create {self.product} directory {directory}: {e.strerror}"
                ) from None
        if not os.access(directory, os.W_OK | os.X_OK):
            raise StorageError(f"{self.product} directory {directory} is not writable")


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

    def close(self) -> None:
        """Close the administrator's connection (a later call opens another)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def __exit__(self, *exc: object) -> None:
        try:
            self.drop_all()
        finally:
            self.close()
