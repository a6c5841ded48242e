"""Hosts for tests: Linux network namespaces on a bridge (issue 26).

One set per test session: a namespace per role (db, master, w1, w2) on
10.200.0.1-4/24, each joined to a bridge of its own by a veth pair, so
that a server, a locust master and its workers talk over a network as on
separate hosts (one kernel: one clock, offset 0).  Every name carries the
session's token (PREFIX + 6 hex digits), so two sessions never meet: each
set has its own bridge, and its addresses are seen by nobody else.

Torn down on success, failure and Ctrl-C (pytest's teardown): the
processes left in the namespaces are killed, the namespaces and the bridge
deleted.  A session killed outright (SIGKILL) leaves its set: the next one
removes it at its start, and only it, knowing it by its lock file (held,
with flock, for as long as its session lives) under LOCKS.  Tests skip,
saying why, where namespaces cannot be made (not root, no `ip`, no
CAP_SYS_ADMIN).  Only addresses in these namespaces, and loopback, are ever
targets.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.tiers import starts

#: Every set's names start with this.
PREFIX = "vft"
#: Where each live set's lock file is (its token's).
LOCKS = Path("/run/vfab-test-netns")
#: The roles, in the order of their addresses.
ROLES = ("db", "master", "w1", "w2")
SUBNET = "10.200.0"


def unavailable() -> str | None:
    """Why namespaces cannot be made here (None: they can)."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "no `ip` command (iproute2)"
    return None


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["ip", *args], capture_output=True, text=True, timeout=30, check=check
    )


class Hosts:
    """One set of namespaces: run commands "on" a role, know its address."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.started: list[subprocess.Popen[str]] = []

    @property
    def bridge(self) -> str:
        return f"{PREFIX}{self.token}br"

    def namespace(self, role: str) -> str:
        return f"{PREFIX}{self.token}-{role}"

    def address(self, role: str) -> str:
        return f"{SUBNET}.{ROLES.index(role) + 1}"

    def command(self, role: str, argv: list[str]) -> list[str]:
        """*argv* run in *role*'s namespace."""
        return ["ip", "netns", "exec", self.namespace(role), *argv]

    def popen(self, role: str, argv: list[str], **kwargs: Any) -> subprocess.Popen[str]:
        """A process in *role*'s namespace, stopped at teardown if the test
        did not stop it."""
        process = subprocess.Popen(
            self.command(role, argv), text=True, start_new_session=True, **kwargs
        )
        self.started.append(process)
        return process

    def pids(self, role: str) -> list[int]:
        """Every process in *role*'s namespace."""
        out = _ip("netns", "pids", self.namespace(role), check=False).stdout
        return [int(p) for p in out.split()]

    # -- life cycle -------------------------------------------------------

    def create(self) -> None:
        _ip("link", "add", self.bridge, "type", "bridge")
        _ip("link", "set", self.bridge, "up")
        for i, role in enumerate(ROLES):
            ns = self.namespace(role)
            outside, inside = f"{PREFIX}{self.token}{i}", f"{PREFIX}{self.token}{i}p"
            _ip("netns", "add", ns)
            _ip("link", "add", outside, "type", "veth", "peer", "name", inside)
            _ip("link", "set", inside, "netns", ns)
            _ip("link", "set", outside, "master", self.bridge)
            _ip("link", "set", outside, "up")
            _ip("-n", ns, "addr", "add", f"{self.address(role)}/24", "dev", inside)
            _ip("-n", ns, "link", "set", inside, "up")
            _ip("-n", ns, "link", "set", "lo", "up")

    def stop_processes(self, grace: float = 5.0) -> None:
        """SIGTERM what the test started, then SIGKILL whatever is left in
        the namespaces (bounded)."""
        for process in self.started:
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        for process in self.started:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(max(0.0, deadline - time.monotonic()))
        _kill_all(self.token)
        for process in self.started:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(5)

    def destroy(self) -> None:
        self.stop_processes()
        _remove(self.token)


def _namespaces() -> list[str]:
    out = _ip("netns", "list", check=False).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def _links() -> list[str]:
    out = _ip("-o", "link", "show", check=False).stdout
    names = []
    for line in out.splitlines():
        parts = line.split(":")
        if len(parts) > 1:
            names.append(parts[1].strip().partition("@")[0])
    return names


def _token_of(name: str) -> str | None:
    if not name.startswith(PREFIX) or len(name) < len(PREFIX) + 6:
        return None
    token = name[len(PREFIX) : len(PREFIX) + 6]
    return token if all(c in "0123456789abcdef" for c in token) else None


def _kill_all(token: str) -> None:
    for ns in _namespaces():
        if _token_of(ns) == token:
            out = _ip("netns", "pids", ns, check=False).stdout
            for pid in out.split():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pid), signal.SIGKILL)


def _remove(token: str) -> None:
    """Every namespace and link of *token*'s set (the veths go with their
    namespace), then its lock file."""
    _kill_all(token)
    for ns in _namespaces():
        if _token_of(ns) == token:
            _ip("netns", "del", ns, check=False)
    for link in _links():
        if _token_of(link) == token:
            _ip("link", "del", link, check=False)
    with contextlib.suppress(FileNotFoundError):
        (LOCKS / f"{token}.lock").unlink()


def clean_stale() -> list[str]:
    """Remove the sets of sessions that are gone: a lock file nobody holds,
    or names of PREFIX with no lock file at all.  Their tokens."""
    LOCKS.mkdir(parents=True, exist_ok=True)
    live: set[str] = set()
    stale: set[str] = set()
    for lock in LOCKS.glob("*.lock"):
        fd = os.open(lock, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            live.add(lock.stem)
        else:
            stale.add(lock.stem)
        finally:
            os.close(fd)  # releases the lock taken to test it
    for name in _namespaces() + _links():
        token = _token_of(name)
        if token is not None and token not in live:
            stale.add(token)
    for token in sorted(stale):
        _remove(token)
    return sorted(stale)


@contextlib.contextmanager
def hosts(token: str) -> Iterator[Hosts]:
    """A new set of namespaces for *token* (6 hex digits), removed on
    leaving; its lock held meanwhile.  Sets left by dead sessions are
    removed first."""
    clean_stale()
    LOCKS.mkdir(parents=True, exist_ok=True)
    # The lock file appears locked: made under another name, then renamed,
    # so that a session cleaning up never finds it free.
    staging = LOCKS / f".{token}.{os.getpid()}"
    fd = os.open(staging, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.rename(staging, LOCKS / f"{token}.lock")
        made = Hosts(token)
        try:
            made.create()
            yield made
        finally:
            made.destroy()
    finally:
        os.close(fd)


@pytest.fixture(scope="session")
@starts("netns")
def netns_hosts() -> Iterator[Hosts]:
    """The session's namespaces (see the module docstring); skip, saying
    why, where they cannot be made."""
    reason = unavailable()
    if reason is not None:
        pytest.skip(reason)
    token = os.environ.get("VFAB_TEST_SESSION", os.urandom(3).hex())[:6]
    try:
        with hosts(token) as made:
            yield made
    except subprocess.CalledProcessError as e:
        detail = (e.stderr or "").strip().splitlines()
        pytest.skip(
            "cannot make network namespaces here: " + (detail[-1] if detail else str(e))
        )
