"""The parent's handle on one side's worker (scenarios.ab.worker): started
with the side's python, the checkout in use first on PYTHONPATH (the same
measuring code on both sides), in a session of its own so that Ctrl-C
reaches the parent only, which stops it; a request written, its reply read
within a bound; stopped on every exit (quit, then SIGTERM to its process
group, then SIGKILL), the servers it started with it.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from scenarios.ab.envs import PROJECT_ROOT, Env
from scenarios.errors import ConfigError, RunFailure
from storages.process import die_with_parent, last_line

#: Bounds on each wait (seconds): the hello (imports), a setup (servers
#: started), one trial, a worker's exit once told to quit, then SIGTERM.
HELLO_S = 120.0
SETUP_S = 300.0
TRIAL_S = 1800.0
QUIT_S = 30.0
TERM_S = 10.0


class Side:
    """One worker: *name* is "A" or "B"; *cpu* pins it to one core (duet)."""

    def __init__(self, name: str, env: Env, log: Path, cpu: int | None = None) -> None:
        self.name = name
        self.env = env
        self.log = log
        self.cpu = cpu
        self.process: subprocess.Popen[bytes] | None = None
        self._buffer = b""
        self.hello: dict[str, Any] = {}
        #: A request sent and not yet answered (a stop then goes straight to
        #: SIGTERM: the worker reads its pipe only between requests).
        self.busy = False

    def start(self) -> dict[str, Any]:
        """Start the worker and read its hello; ConfigError when the
        environment cannot run the measuring side (a module missing)."""
        env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
        env["PYTHONPATH"] = str(PROJECT_ROOT)
        argv = [str(self.env.python), "-m", "scenarios.ab.worker"]
        if self.cpu is not None:
            argv.append(str(self.cpu))
        with open(self.log, "ab") as log:
            try:
                self.process = subprocess.Popen(
                    argv,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=log,
                    cwd=PROJECT_ROOT,
                    env=env,
                    start_new_session=True,
                    preexec_fn=die_with_parent(signal.SIGTERM),
                )
            except OSError as e:
                raise ConfigError(
                    f"{self.name}: cannot start {self.env.python}: {e.strerror or e}"
                ) from None
        reply = self._read(HELLO_S, "starting")
        if "error" in reply:
            hint = " (name requirements to build one instead)"
            raise ConfigError(
                f"{self.name}: {self.env.root} cannot run the measuring side: "
                f"{reply['error']}{hint if self.env.spec.kind == 'venv' else ''}"
            )
        self.hello = reply["hello"]
        where = self.hello.get("scenarios", "")
        if Path(where) != PROJECT_ROOT / "scenarios":
            raise ConfigError(
                f"{self.name}: the worker imported the project from {where}, "
                f"not from the checkout in use ({PROJECT_ROOT})"
            )
        return self.hello

    def send(self, message: dict[str, Any]) -> None:
        assert self.process is not None and self.process.stdin is not None
        try:
            self.process.stdin.write(json.dumps(message).encode() + b"\n")
            self.process.stdin.flush()
            self.busy = True
        except (BrokenPipeError, OSError):
            raise self._died("sending a request") from None

    def receive(self, timeout: float, what: str) -> dict[str, Any]:
        """The next reply; RunFailure on an error reply, a timeout or death."""
        reply = self._read(timeout, what)
        if "error" in reply:
            line = f"{self.name}: {what}: {reply['error']}"
            raise ConfigError(line) if reply.get("input") else RunFailure(line)
        return reply

    def _read(self, timeout: float, what: str) -> dict[str, Any]:
        assert self.process is not None and self.process.stdout is not None
        fd = self.process.stdout.fileno()
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while b"\n" not in self._buffer:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RunFailure(
                        f"{self.name}: no reply while {what} in {timeout:.0f} s"
                    )
                if not selector.select(left):
                    continue
                chunk = os.read(fd, 65536)
                if not chunk:
                    raise self._died(what)
                self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        self.busy = False
        try:
            reply = json.loads(line)
        except ValueError:
            raise RunFailure(f"{self.name}: a garbled reply while {what}") from None
        if not isinstance(reply, dict):
            raise RunFailure(f"{self.name}: a garbled reply while {what}")
        return reply

    def _died(self, what: str) -> Exception:
        assert self.process is not None
        try:
            status = self.process.wait(TERM_S)
        except subprocess.TimeoutExpired:
            status = None
        try:
            tail = last_line(self.log.read_text(errors="replace"))
        except OSError:
            tail = "no output"
        error = RunFailure(
            f"{self.name}: the worker exited (status {status}) while {what}: {tail}"
        )
        if what == "starting":
            return ConfigError(f"{self.name}: {self.env.root}: cannot start: {tail}")
        return error

    def stop(self) -> None:
        """Quit (SIGTERM to its process group at once when it is busy with
        a request), then SIGKILL: never left running, whatever happened."""
        process = self.process
        if process is None or process.poll() is not None:
            return
        try:
            if process.stdin is not None:
                process.stdin.write(b'{"op": "quit"}\n')
                process.stdin.close()
        except OSError:
            pass
        steps: list[tuple[signal.Signals | None, float]] = [
            (signal.SIGTERM, TERM_S),
            (signal.SIGKILL, TERM_S),
        ]
        if not self.busy:
            steps.insert(0, (None, QUIT_S))
        for sig, wait in steps:
            if sig is not None:
                try:
                    os.killpg(process.pid, sig)
                except ProcessLookupError:
                    return
            try:
                process.wait(wait)
                break
            except subprocess.TimeoutExpired:
                continue
        # What the worker started and left in its process group (runzeo
        # leads a session of its own and gets SIGTERM when the worker dies:
        # storages.process.die_with_parent).
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if process.stdout is not None:
            process.stdout.close()
