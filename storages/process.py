"""One life cycle for the server processes the suite starts: runzeo
(storages.zeo.server), PostgreSQL and MariaDB (storages.relstorage).

ServerProcess starts a child (a port the user named must be free; a port
picked here and lost to a race is picked again, three times), waits until
it answers, stops it (its own way, then SIGKILL after a grace period),
kills it as a crash would (kill()) and starts it again on the same data
and port (restart()).  ServedShared is the storages.base.Shared of such a
server: what `vfab-bench scale` kills and restarts.  The child
runs in its own session, so that Ctrl-C at the terminal reaches the suite
only, and Linux sends it a signal if the suite dies without cleaning up.
Subclasses say what to run and how to tell it is ready.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from storages.base import Shared, StorageError
from storages.ports import LOCALHOST, check_port_free, free_port, host_port

_S = TypeVar("_S", bound="ServerProcess")


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
    """The last line of *text* that is not blank, or "no output"."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else "no output"


class ServerProcess:
    """One server process, a child of this one, on (*host*, *port*); with
    *port* 0 a free one is picked.

    Subclasses provide _command(), _ready() and _output() (where its
    output goes), and may override _prepare() (once before the first
    start: a data directory), _before_spawn() (before each attempt: a
    config naming the port), _popen_kwargs(), _shutdown() (the default
    sends ``death_signal``), _after_start() and _after_stop().

    Limits: Linux sends the parent-death signal when the *thread* that
    started the server ends, so start servers from the main thread (or one
    that lives as long as they do).
    """

    #: For messages: "runzeo", "PostgreSQL", "MariaDB".
    product = "server"
    #: Signal Linux sends the server if the suite dies; also stop()'s
    #: default way to ask it to stop.
    death_signal: int = signal.SIGTERM
    #: Seconds of the last steps (initialize, start, stop), for reports.
    timings: dict[str, float]

    def __init__(self, host: str = LOCALHOST, port: int = 0) -> None:
        self.host = host
        self.requested_port = port
        self.port = port
        self.process: subprocess.Popen[bytes] | None = None
        self.timings = {}

    # -- what subclasses provide ------------------------------------------------

    def _command(self) -> list[str]:
        """The server's command line."""
        raise NotImplementedError

    def _ready(self) -> bool:
        """True once the server accepts connections."""
        raise NotImplementedError

    def _output(self) -> tuple[Path, str, bool]:
        """(file the child writes to, its open mode, whether stdout goes
        there too: else only stderr, stdout discarded)."""
        raise NotImplementedError

    def _prepare(self) -> None:
        """Before the first attempt to start (a data directory)."""

    def _before_spawn(self) -> None:
        """Before each attempt, self.port chosen (a config naming it)."""

    def _popen_kwargs(self) -> dict[str, Any]:
        """More Popen keywords (env, user...)."""
        return {}

    def _shutdown(self, process: subprocess.Popen[bytes]) -> None:
        """Ask the server (*process*) to stop; stop() waits for it."""
        process.send_signal(self.death_signal)

    def _after_start(self) -> None:
        """Once the server is ready (create users, ...)."""

    def _after_stop(self) -> None:
        """Once the server has stopped (remove what start() created)."""

    def last_log_line(self) -> str:
        """The last line the server wrote, for messages."""
        try:
            path, _, _ = self._output()
            return last_line(path.read_text(errors="replace"))
        except (OSError, AssertionError):
            return "no output"

    # -- the life cycle -------------------------------------------------------------

    @property
    def address(self) -> tuple[str, int]:
        return self.host, self.port

    def start(self: _S, timeout: float = 60.0) -> _S:
        """Start the server and return once it answers; StorageError (the
        server stopped again) if it does not."""
        if self.running:
            return self
        try:
            if self.requested_port:  # before a slow _prepare
                check_port_free(self.host, self.requested_port)
            self._prepare()
            # A port the user named and that is busy is their mistake; a
            # port picked here and lost to a race is ours: pick another.
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
                f"{self.product} did not start on {host_port(self.host, self.port)}: "
                f"{self.last_log_line()}"
            )
        except BaseException:
            self.stop()
            raise

    def _spawn(self, timeout: float) -> bool:
        """One attempt: True once it answers, False if it exited first."""
        self._before_spawn()
        path, mode, with_stdout = self._output()
        # The child keeps its own descriptor of the file; ours closes here.
        with open(path, mode) as out:
            try:
                self.process = subprocess.Popen(
                    self._command(),
                    stdin=subprocess.DEVNULL,
                    stdout=out if with_stdout else subprocess.DEVNULL,
                    stderr=subprocess.STDOUT if with_stdout else out,
                    start_new_session=True,
                    preexec_fn=die_with_parent(self.death_signal),
                    **self._popen_kwargs(),
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
            f"{self.product} did not answer on {host_port(self.host, self.port)} "
            f"within {timeout:.0f} s: {self.last_log_line()}"
        )

    def stop(self, grace: float = 30.0) -> None:
        """Stop the server (its own way, then SIGKILL after *grace*
        seconds); safe to call twice."""
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
        self._after_stop()

    def kill(self) -> None:
        """SIGKILL the server and every process of its session (PostgreSQL's
        backends), as a crash would: no shutdown, its data left as they are.
        Its directory stays, for restart()."""
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            # The child leads its own session (start_new_session), so its
            # process group is its pid.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()

    def restart(self: _S, timeout: float = 60.0) -> _S:
        """Start the server again on the same data and the same port, where
        its clients look for it (StorageError if that port was taken
        meanwhile)."""
        self.requested_port = self.port
        return self.start(timeout)

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def __enter__(self: _S) -> _S:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class ServedShared(Shared):
    """A database other processes open (*client*) on a ServerProcess the
    suite started: its pid (children counted with it), kill (a crash) and
    restart (same data, same port).  Subclasses add what a kill breaks on
    this side in _after_kill()."""

    can_kill = True

    def __init__(self, client: str, server: ServerProcess) -> None:
        super().__init__(client)
        self.server = server

    def server_pids(self) -> list[int]:
        pid = self.server.pid
        return [pid] if pid else []

    def kill_server(self) -> None:
        self.server.kill()
        self._after_kill()

    def _after_kill(self) -> None:
        """What the kill left to clean up here (an admin connection)."""

    def restart_server(self) -> None:
        self.server.restart()

    @property
    def server_running(self) -> bool:
        return self.server.running
