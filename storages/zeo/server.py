"""runzeo as a child process: ZEOServer.

runzeo serves one storage or several (a ``servable`` factory's
served_section(): FileStorage for zeo, BDBStorage for zeo+bdb) from a
ZConfig file the suite writes; it runs as ``python -m ZEO.runzeo -C
zeo.conf`` in its own session (Ctrl-C in the terminal reaches the suite,
which stops the server itself), and start() returns once a client can
connect (the life cycle, port retry included, is storages.process's, as
PostgreSQL's and MariaDB's).  ZEOServer is reusable: the zeo factory, its pool,
`vfab-bench serve` and the tests use it.  SERVER_FILES are the files a
runzeo writes beside the data.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from storages.ports import LOCALHOST, host_port
from storages.process import ServerProcess, last_line

#: Files of a runzeo the suite starts, beside the served storage's: its
#: config, its log and its stderr (not the storage: left out of its size).
SERVER_FILES = ("zeo.conf", "zeo.log", "zeo.stderr")


class ZEOServer(ServerProcess):
    """One runzeo child process.

    *storage_sections* is the ZConfig text of the served storage (a
    served_section(), named "1"), or several such texts, each naming its
    storage differently (renamed_section()); clients ask for a storage by
    that name.  *imports* are the ZConfig %import lines they need (e.g.
    ["storages.bdb"]).  Its config, log and stderr (SERVER_FILES) go in
    *directory*.  start() returns once a client can connect; stop() sends
    SIGTERM, then SIGKILL after a grace period.  Use as a context manager.
    """

    product = "runzeo"

    def __init__(
        self,
        directory: Path,
        storage_sections: str | Sequence[str],
        host: str = LOCALHOST,
        port: int = 0,
        imports: tuple[str, ...] = (),
    ) -> None:
        super().__init__(host, port)
        self.directory = Path(directory)
        if isinstance(storage_sections, str):
            storage_sections = (storage_sections,)
        self.storage_sections = tuple(storage_sections)
        self.imports = imports
        self.log_path = self.directory / "zeo.log"

    def config_text(self) -> str:
        lines = [f"%import {name}" for name in self.imports]
        lines += [
            "<zeo>",
            f"  address {host_port(self.host, self.port)}",
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

    # -- storages.process's hooks ---------------------------------------------

    def _before_spawn(self) -> None:
        (self.directory / "zeo.conf").write_text(self.config_text())

    def _command(self) -> list[str]:
        config = self.directory / "zeo.conf"
        return [sys.executable, "-m", "ZEO.runzeo", "-C", str(config)]

    def _popen_kwargs(self) -> dict[str, Any]:
        env = dict(os.environ)
        # The served storage may live in this project (storages.bdb), two
        # directories above this module (storages/zeo/server.py).
        project = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (project, env.get("PYTHONPATH", "")) if p
        )
        return {"env": env}

    def _output(self) -> tuple[Path, str, bool]:
        return self.directory / "zeo.stderr", "wb", False

    def _ready(self) -> bool:
        try:
            with socket.create_connection(self.address, timeout=0.5):
                return True
        except OSError:
            return False

    def last_log_line(self) -> str:
        # A Python error goes to stderr, the server's own words to its log.
        for name in ("zeo.stderr", "zeo.log"):
            try:
                text = (self.directory / name).read_text(errors="replace")
            except OSError:
                continue
            if text.strip():
                return last_line(text)
        return "no output"

    def start(self, timeout: float = 30.0) -> ZEOServer:
        return super().start(timeout)

    def stop(self, grace: float = 10.0) -> None:
        super().stop(grace)

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
        return f"runzeo exited with status {code}: {self.last_log_line()}"
