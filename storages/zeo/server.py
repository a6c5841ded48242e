"""runzeo as a child process: ZEOServer.

runzeo serves one storage or several (a ``servable`` factory's
served_section(): FileStorage for zeo, BDBStorage for zeo+bdb) from a
ZConfig file the suite writes; it runs as ``python -m ZEO.runzeo -C
zeo.conf`` in its own session (Ctrl-C in the terminal reaches the suite,
which stops the server itself), and start() returns once a client can
connect.  ZEOServer is reusable: the zeo factory, its pool,
`vfab-bench serve` and the tests use it.  SERVER_FILES are the files a
runzeo writes beside the data.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from storages.base import StorageError
from storages.ports import LOCALHOST, check_port_free, free_port

#: Files of a runzeo the suite starts, beside the served storage's: its
#: config, its log and its stderr (not the storage: left out of its size).
SERVER_FILES = ("zeo.conf", "zeo.log", "zeo.stderr")


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
        # The served storage may live in this project (storages.bdb), two
        # directories above this module (storages/zeo/server.py).
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
