"""A case's directory and the helpers its setup starts (tests/support/hostile.py):
a served data set, a runzeo on [::1], a listener that never answers, a
background writer, a fake valgrind, a small tmpfs; all stopped, unmounted
and removed when the case ends."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path

from tests.support.hostile_proc import (
    HELPER_START,
    HELPER_VAR,
    Checkout,
    Skip,
    kill_marked,
    marked,
    pause,
    read,
    stop_process,
)

# -- helpers -------------------------------------------------


class Served:
    """A `vfab-bench serve --path` the setup started: its address, its runzeo."""

    def __init__(self, proc: subprocess.Popen[bytes], address: str, mark: str):
        self.proc = proc
        self.address = address
        self._mark = mark

    @property
    def port(self) -> int:
        return int(self.address.rpartition(":")[2])

    def runzeo_pid(self) -> int:
        for pid, name in marked(HELPER_VAR, self._mark).items():
            if "runzeo" in name:
                with contextlib.suppress(OSError):
                    if _parent(pid) == self.proc.pid:
                        return pid
        raise RuntimeError("the served data set has no runzeo")


def _parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat", "rb") as f:
        return int(f.read().rpartition(b")")[2].split()[1])


class Work:
    """One case's directory: in/ (the inputs, watched: bytes and listing),
    out/ (where the command runs and writes), tmp/ (its TMPDIR, empty
    after), data/ (what helpers serve), and the helpers to stop after."""

    def __init__(self, root: Path, checkout: Checkout, bases: Mapping[str, Path]):
        self.root, self.checkout, self.bases = root, checkout, bases
        self.mark = uuid.uuid4().hex
        # Not ".../tmp": run --counts (scenarios.counts.runner.reap) stops
        # every process whose command line holds "$TMPDIR/vfab-counts-N/",
        # so another user's run with TMPDIR=/tmp would stop this one's.
        self.inputs, self.out, self.tmp = root / "in", root / "out", root / "tmpdir"
        self.data, self.helper_tmp = root / "data", root / "helper-tmp"
        for d in (self.inputs, self.out, self.tmp, self.data, self.helper_tmp):
            d.mkdir()
        self.stack = contextlib.ExitStack()
        self.mounts: list[Path] = []
        #: what the case's placeholders resolved to (one copy, one server)
        self.resolved: dict[str, str] = {}
        self.served: list[Served] = []

    # inputs
    def copy(
        self, base: str, name: str | None = None, into: Path | None = None
    ) -> Path:
        """A copy of base *base* (a file, or a data set's directory without
        FileStorage's scratch and lock files) in in/ (or *into*)."""
        src = self.bases[base]
        dst = (into or self.inputs) / (name or src.name)
        if src.is_dir():
            shutil.copytree(src, dst, ignore=shutil.ignore_patterns("*.tmp", "*.lock"))
        else:
            shutil.copyfile(src, dst)
        return dst

    def cli(self, *args: str) -> list[str]:
        return self.checkout.cli(*args)

    def helper_env(self) -> dict[str, str]:
        return self.checkout.env(HELPER_VAR, self.mark, self.helper_tmp)

    # helpers
    def background(self, argv: list[str]) -> subprocess.Popen[bytes]:
        """A helper command (a second writer), stopped after the case."""
        log = open(self.root / f"helper-{time.monotonic_ns()}.log", "wb")  # noqa: SIM115
        proc = subprocess.Popen(
            argv,
            cwd=self.data,
            env=self.helper_env(),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.stack.callback(log.close)
        self.stack.callback(stop_process, proc)
        return proc

    def serve(self, data: Path, *args: str, port: int = 0) -> Served:
        """`vfab-bench serve --path DATA` until the case ends."""
        argv = self.cli("serve", "--path", str(data), "--port", str(port), *args)
        log = open(self.root / f"serve-{port}-{time.monotonic_ns()}.log", "wb")  # noqa: SIM115
        proc = subprocess.Popen(
            argv,
            cwd=self.data,
            env=self.helper_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log,
            start_new_session=True,
        )
        served = Served(proc, "", self.mark)
        self.served.append(served)

        def wake_and_stop() -> None:
            with contextlib.suppress(RuntimeError, ProcessLookupError):
                os.kill(served.runzeo_pid(), signal.SIGCONT)
            stop_process(proc)
            log.close()

        self.stack.callback(wake_and_stop)
        lines: list[bytes] = []
        reader = threading.Thread(
            target=lambda: lines.extend(proc.stdout or []), daemon=True
        )
        reader.start()
        deadline = time.monotonic() + HELPER_START
        while time.monotonic() < deadline:
            for line in list(lines):
                if line.startswith(b"serving "):
                    served.address = line.split()[-1].decode()
                    return served
            if proc.poll() is not None and not reader.is_alive():
                break
            pause(0.1)
        raise RuntimeError(f"serve did not start: {(self.root / log.name).name}")

    def runzeo6(self, data_fs: Path) -> int:
        """A runzeo of the checkout on [::1]:PORT serving *data_fs*."""
        conf = self.data / "zeo6.conf"
        log = self.data / "zeo6.log"
        try:
            with socket.socket(socket.AF_INET6) as sock:
                sock.bind(("::1", 0))
                port = int(sock.getsockname()[1])
        except OSError as e:
            raise Skip(f"no IPv6 loopback here: {e}") from e
        conf.write_text(
            f"<zeo>\n  address [::1]:{port}\n</zeo>\n"
            f"<filestorage 1>\n  path {data_fs}\n</filestorage>\n"
            "<eventlog>\n  <logfile>\n"
            f"    path {log}\n  </logfile>\n</eventlog>\n"
        )
        proc = subprocess.Popen(
            [str(self.checkout.bin / "runzeo"), "-C", str(conf)],
            cwd=self.data,
            env=self.helper_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.stack.callback(stop_process, proc)
        deadline = time.monotonic() + HELPER_START
        while time.monotonic() < deadline and proc.poll() is None:
            if "listening on ('::1'" in read(log):
                return port
            pause(0.1)
        raise Skip(f"no runzeo on [::1]: {read(log)[-200:]}")

    def silent_listener(self) -> int:
        """A TCP port on 127.0.0.1 that accepts connections and never answers."""
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        held: list[socket.socket] = []
        closed = threading.Event()

        def accept() -> None:
            while not closed.is_set():
                try:
                    held.append(sock.accept()[0])
                except OSError:
                    return

        threading.Thread(target=accept, daemon=True).start()

        def close() -> None:
            closed.set()
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
            for conn in held:
                conn.close()

        self.stack.callback(close)
        return int(sock.getsockname()[1])

    def free_port(self) -> int:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            return int(sock.getsockname()[1])

    def idle_valgrind(self) -> Path:
        """A directory holding a `valgrind` that says it is valgrind and does
        nothing else, exit status 0 (put it first on PATH)."""
        bindir = self.root / "idlebin"
        bindir.mkdir()
        fake = bindir / "valgrind"
        fake.write_text(
            "#!/bin/sh\n# a valgrind that does nothing\n"
            'if [ "$1" = --version ]; then echo valgrind-3.19.0; fi\nexit 0\n'
        )
        fake.chmod(0o755)
        return bindir

    def fake_valgrind(self) -> Path:
        """A directory holding a `valgrind` that never returns (put it first
        on PATH); once started, it leaves a file `started` there."""
        bindir = self.root / "fakebin"
        bindir.mkdir()
        fake = bindir / "valgrind"
        fake.write_text(
            "#!/bin/sh\n# a valgrind that never returns\n"
            f"touch {bindir / 'started'}\n"
            "while :; do sleep 1; done\n"
        )
        fake.chmod(0o755)
        return bindir

    def tmpfs(self, name: str, options: str) -> Path:
        """A small tmpfs mounted at ROOT/NAME (mount -o OPTIONS), unmounted
        after the case."""
        where = self.root / name
        where.mkdir()
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise Skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
        self.mounts.append(where)
        return where

    def close(self) -> None:
        try:
            self.stack.close()
        finally:
            kill_marked(HELPER_VAR, self.mark, grace=0)
            for where in reversed(self.mounts):
                subprocess.run(["umount", "-l", str(where)], capture_output=True)
            shutil.rmtree(self.root, ignore_errors=True)


@contextlib.contextmanager
def work_dir(
    scratch: Path, checkout: Checkout, bases: Mapping[str, Path]
) -> Iterator[Work]:
    root = Path(tempfile.mkdtemp(prefix="case-", dir=scratch))
    root.chmod(0o755)  # as /tmp is: initdb runs as postgres in a case's cwd
    work = Work(root, checkout, bases)
    try:
        yield work
    finally:
        work.close()
