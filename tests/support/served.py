"""`vfab-bench serve` as a test's server: a real subprocess, stopped with
SIGTERM as a user's supervisor would, and checked for a clean exit."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.conftest import TOKEN_VAR, runzeo_pids

ROOT = Path(__file__).resolve().parents[2]
LOCUST = Path(sys.executable).with_name("locust")


def env() -> dict[str, str]:
    """The environment the suite's subprocesses run with: this checkout on
    the path, the venv's scripts first, the test session's token (see
    conftest) so that the leak check knows their runzeo servers, and a free
    port for a locust master (LOCUST_MASTER_BIND_PORT, and its workers'
    LOCUST_MASTER_NODE_PORT): `locust --processes N` otherwise listens on
    locust's fixed 5557, which the locust of a test on another
    pytest-xdist worker (or of another run on this machine) may hold, or
    whose workers may join.  A --master-port or --master-bind-port on the
    command line still wins."""
    from storages.ports import free_port

    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])
    port = str(free_port())
    return dict(
        os.environ,
        PYTHONPATH=str(ROOT),
        PATH=path,
        LOCUST_MASTER_BIND_PORT=port,
        LOCUST_MASTER_NODE_PORT=port,
    )


def at_work(tmpdir: Path, working: bool, bound: float = 120.0) -> bool:
    """Whether a command run with TMPDIR=*tmpdir* got to work within *bound*
    seconds: it made something there (past its imports, its signal
    handlers installed), or with *working* a client finished an operation
    (a committed attempt in a process-*.jsonl there: a history also holds
    session lines and pending attempts, written before anything ended).
    A test that signals a command "while its users work" waits for this,
    not a sleep: a loaded machine takes longer to start than any sleep
    allows."""
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        if working:
            if committed_in(tmpdir):
                return True
        elif any(tmpdir.iterdir()):
            return True
        time.sleep(0.05)
    return False


def committed_in(tmpdir: Path) -> bool:
    """Whether a client of a command run with TMPDIR=*tmpdir* finished an
    operation: a committed attempt in a process-*.jsonl there."""
    return any(_committed(f) for f in tmpdir.glob("*/process-*.jsonl"))


def _committed(history: Path) -> bool:
    try:
        return '"outcome": "ok"' in history.read_text(errors="replace")
    except OSError:  # removed meanwhile
        return False


class Served:
    """A running `vfab-bench serve`: its address and what it printed."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self.stdout: list[str] = []
        self.stderr: list[str] = []
        self.address = ""

    @property
    def host_port(self) -> tuple[str, int]:
        from storages.zeo import parse_address

        return parse_address(self.address)  # [::1]:PORT too


def _listens(args: tuple[str, ...]) -> bool:
    """Whether serve ARGS starts a server (one that takes --port)."""
    import storages
    from scenarios.cli.serve import servable

    i = args.index("--storage") if "--storage" in args else -1
    name = args[i + 1] if i >= 0 else "file"
    return name in servable() or storages.factory_class(name).starts_server


@contextmanager
def serve(
    *args: str, timeout: float = 60.0, port: bool | None = None
) -> Iterator[Served]:
    """Start `vfab-bench serve --port 0 ARGS` (without --port when *port* is
    false, or by default for a storage with no server, which refuses it),
    wait for its 'serving ... on HOST:PORT' line, and on leaving stop it
    with SIGTERM, expecting exit 0 and no runzeo left behind."""
    before = runzeo_pids()
    free_port = ["--port", "0"] if (_listens(args) if port is None else port) else []
    process = subprocess.Popen(
        [sys.executable, "-m", "scenarios.cli", "serve", *free_port, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env(),
        cwd=ROOT,
    )
    served = Served(process)
    assert process.stderr is not None
    drain = threading.Thread(
        target=lambda: served.stderr.extend(process.stderr),  # type: ignore[arg-type]
        daemon=True,
    )
    drain.start()
    # A serve that never prints its address is killed rather than waited on.
    watchdog = threading.Timer(timeout, lambda: served.address or process.kill())
    watchdog.start()
    try:
        assert process.stdout is not None
        for line in process.stdout:
            served.stdout.append(line)
            if line.startswith("serving "):
                served.address = line.split()[-1]
                break
        watchdog.cancel()
        assert served.address, f"serve exited: {''.join(served.stderr)}"
        yield served
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            code = process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            code = process.wait()
        drain.join(5)
        served.stdout += process.stdout.readlines() if process.stdout else []
        leaked = runzeo_pids() - before
        for pid in leaked:
            os.kill(pid, signal.SIGKILL)
        assert not leaked, f"serve left runzeo running: {sorted(leaked)}"
    assert code == 0, "".join(served.stderr)


def locust_pids() -> list[int]:
    """This test session's locust processes still running (not zombies)."""
    mark = f"{TOKEN_VAR}={os.environ[TOKEN_VAR]}".encode()
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            if not any(a == str(LOCUST).encode() for a in argv[:2]):
                continue
            if mark not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            if (entry / "stat").read_text().rpartition(")")[2].split()[0] == "Z":
                continue
        except OSError:
            continue
        pids.append(int(entry.name))
    return pids
