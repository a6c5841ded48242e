"""The sources of run-to-run variation a count run removes, so the same code
counts the same instructions on any run and any load: the environment
and directory the launcher gives a child, and what the child fixes in
itself first (the sources measured: docs/internals.md).
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import os
import random
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from scenarios import interrupts

#: The hash seed of every count run.
HASH_SEED = "0"

#: time.time() in a count run: this instant (2030-01-01 UTC, later than any
#: real clock a ZEO server stamps its transactions with, so "pack to now"
#: packs what it does natively), one CLOCK_TICK_S later at every call.
CLOCK_START_S = 1_893_456_000.0
CLOCK_TICK_S = 1e-3
#: time.perf_counter() in a count run: 0, one COUNTER_TICK_S per call.
COUNTER_TICK_S = 1e-6

#: The private directory's name: fixed, so paths have the same text (and
#: length) every run; a second count run at the same time takes the next
#: free slot (same length: DIRECTORY_SLOTS at most).
DIRECTORY_NAME = "vfab-counts"
DIRECTORY_SLOTS = 10

#: Environment variables a count run passes on (the rest is left out: a
#: variable's text, like the terminal's or the current directory's, differs
#: between shells and lands in os.environ).
#: Only what the suite reads is passed: another of its own variables, set
#: for nothing a child reads, changed counts by 1.4% (docs/counts.md).
KEPT_VARIABLES = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "PYTHONPATH",
    "VALGRIND_LIB",
    # Where the client-request extension is built (scenarios.counts.build).
    "VFAB_CACHE_DIR",
    # Where PostgreSQL's programs are (storages.relstorage.postgresql).
    "VFAB_PG_BINDIR",
)
#: Variables that choose an implementation the counted child must use as
#: this process does (PURE_PYTHON: persistent's, BTrees', zope.interface's
#: and zodbpickle's Python code instead of their C accelerators): carried,
#: and the implementations the child loaded recorded in the count file
#: (scenarios.results.metadata.IMPLEMENTATION_VARIABLES: not imported, this
#: module is the first the counted child imports).
CARRIED_VARIABLES = ("PURE_PYTHON",)
#: Variables that choose an implementation of the interpreter itself: a
#: count cannot say what they measured, so a count run refuses them.
REFUSED_VARIABLES = {
    "PYTHONMALLOC": "chooses CPython's memory allocator",
    "PYTHONDEVMODE": "puts debug hooks on CPython's allocators",
    "PYTHONOPTIMIZE": "removes asserts and docstrings from the code counted",
}
#: The database clients' own variables (a user's --storage-uri may need
#: PGPASSWORD or MYSQL_PWD).
KEPT_PREFIXES = ("PG", "MYSQL")

#: The variable marking every process one count run started, and the
#: length of its value (new_run_mark()).
RUN_VAR = "VFAB_COUNTS_RUN"
RUN_LENGTH = 32


def new_run_mark() -> str:
    """A count run's mark (RUN_VAR's value): unique, RUN_LENGTH characters."""
    return uuid.uuid4().hex


def child_environment(
    private: Path, write_bytecode: bool = False, run: str = ""
) -> dict[str, str]:
    """The environment of the re-executed run: fixed hash seed, TMPDIR in
    the private directory, nothing that varies by shell, the compiled
    bytecode of every module in the private directory's own cache, and
    RUN_VAR=*run*: the mark by which the launcher finds every process this
    run started (a runzeo in a session of its own included) and no other
    (RUN_LENGTH characters: a text of the same length every run).

    Whether an import reads a .pyc or compiles the source (and writes the
    .pyc) changes what the heap holds when the counting starts, and with it
    the counts (by 0.7% on a small loop): the launcher first runs the same
    trials natively with *write_bytecode* (filling the private cache), then
    the counted runs read that cache and write nothing."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k in KEPT_VARIABLES or k in CARRIED_VARIABLES or k.startswith(KEPT_PREFIXES)
    }
    if not write_bytecode:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.pop(RUN_VAR, None)
    if run:
        if len(run) != RUN_LENGTH:
            raise ValueError(f"a run mark has {RUN_LENGTH} characters: {run!r}")
        env[RUN_VAR] = run
    env.update(
        PYTHONHASHSEED=HASH_SEED,
        TMPDIR=str(private / "tmp"),
        PYTHONPYCACHEPREFIX=str(private / "pycache"),
        LANG="C.UTF-8",
        LC_ALL="C.UTF-8",
    )
    return env


def refused_variable() -> str | None:
    """Why a count cannot run in this environment (one line: a variable of
    REFUSED_VARIABLES set), or None."""
    for name, what in REFUSED_VARIABLES.items():
        if os.environ.get(name):
            return (
                f"{name} is set: it {what}, which a count would not show; "
                f"unset it to count"
            )
    return None


@contextlib.contextmanager
def private_directory(base: Path | None = None) -> Iterator[Path]:
    """A directory of a fixed name (DIRECTORY_NAME-N, N the first free slot)
    in *base* (the system's temporary directory), emptied, locked for this
    run, and removed at its end with its lock file.  Refuses (RuntimeError)
    when every slot is taken."""
    base = Path(base or tempfile.gettempdir())
    for slot in range(DIRECTORY_SLOTS):
        lock_path = base / f".{DIRECTORY_NAME}-{slot}.lock"
        fd = _locked(lock_path)
        if fd is None:
            continue
        path = base / f"{DIRECTORY_NAME}-{slot}"
        try:
            # Stop signals held while it is made and removed: one raised
            # mid-removal left it behind (a release stopped by SIGTERM
            # on a loaded machine).
            with interrupts.held():
                shutil.rmtree(path, ignore_errors=True)
                path.mkdir(mode=0o700)
                (path / "tmp").mkdir()
            yield path
        finally:
            with interrupts.held():
                shutil.rmtree(path, ignore_errors=True)
                # Removed while still held: a run that opened it meanwhile
                # finds, once it holds it, that it is no longer the file at
                # lock_path (_locked), and starts again.
                with contextlib.suppress(OSError):
                    os.unlink(lock_path)
                os.close(fd)
        return
    raise RuntimeError(f"{DIRECTORY_SLOTS} count runs are already running in {base}")


def _locked(path: Path) -> int | None:
    """A descriptor of *path* under an exclusive lock, or None when another
    run holds it.  Its holder removes the file when done: a lock won on a
    file no longer at *path* is given up and *path* opened again."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        held = os.fstat(fd)
        try:
            now = os.stat(path)
        except FileNotFoundError:
            now = None
        if now is not None and (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino):
            return fd
        os.close(fd)


class Clock:
    """A clock that moves by a fixed step at each reading, from a fixed
    start: the same readings in the same order on every run."""

    def __init__(self, start: float, step: float) -> None:
        self._calls = itertools.count()
        self.start = start
        self.step = step

    def __call__(self) -> float:
        return self.start + next(self._calls) * self.step


class Names:
    """tempfile's candidate names, in a fixed order (its own are random)."""

    def __init__(self) -> None:
        self._n = itertools.count()

    def __iter__(self) -> Names:
        return self

    def __next__(self) -> str:
        return f"tmp{next(self._n):05d}"


#: The variable naming a count child's start-up layout (shift_layout()).
LAYOUT_VAR = "VFAB_COUNTS_LAYOUT"

#: Objects kept alive by shift_layout(): the heap a layout starts from.
_BALLAST: list[object] = []


def shift_layout(seed: int) -> None:
    """What an unrelated change does to a process, done on purpose: at
    start-up, a pseudo-random set of objects of the sizes CPython's
    small-object allocator serves (and a few it hands to malloc), about
    half of them freed, so every later allocation lands elsewhere; and a
    pseudo-random number of classes defined and looked up, so every later
    type gets another version tag.  The same for the same *seed*; seed 0
    changes nothing (Mytkowicz et al., ASPLOS 2009; Stabilizer, ASPLOS
    2013)."""
    if seed == 0:
        return
    rng = random.Random(seed)
    made: list[object] = []
    for _ in range(rng.randrange(500, 6000)):
        kind = rng.random()
        if kind < 0.6:
            made.append(bytes(rng.randrange(1, 520)))
        elif kind < 0.8:
            made.append([None] * rng.randrange(0, 40))
        elif kind < 0.97:
            made.append({i: None for i in range(rng.randrange(0, 12))})
        else:
            made.append(bytearray(rng.randrange(520, 9000)))
    _BALLAST.extend(m for m in made if rng.random() < 0.5)
    for i in range(rng.randrange(0, 4096)):
        cls = type(f"Layout{i}", (), {"x": i})
        _BALLAST.append(cls.x)  # type: ignore[attr-defined]
        if rng.random() < 0.2:
            _BALLAST.append(cls)


def fix_process() -> None:
    """Remove, in this process, the sources a fresh environment cannot:
    clocks, randomness, temporary names and psutil.  Call it before the
    storages are imported (RelStorage binds perf_counter at import).
    time.monotonic stays real: asyncio and threading wait on it."""
    # RelStorage's cache sizes itself by psutil's reading of this process's
    # memory when psutil imports; without it, by its options alone.
    sys.modules["psutil"] = None  # type: ignore[assignment]
    random.seed(0)
    time.time = Clock(CLOCK_START_S, CLOCK_TICK_S)  # type: ignore[assignment]
    time.perf_counter = Clock(0.0, COUNTER_TICK_S)  # type: ignore[assignment]
    real_gmtime = time.gmtime
    time.gmtime = lambda secs=None: real_gmtime(  # type: ignore[assignment]
        time.time() if secs is None else secs
    )
    tempfile._name_sequence = Names()  # type: ignore[attr-defined]
    tempfile.tempdir = None  # read TMPDIR again


def fix_trial_keys(private: Path) -> None:
    """Trial keys on a database the suite did not create (--storage-config,
    --storage-uri, --zeo-address) hold the real time, the pid and a random
    part (storages.base.new_trial_key); a count run's are
    "trial-counts-N-000001", ... (N: the private directory's slot, so that
    two count runs at once never share one)."""
    import storages.configured
    import storages.zeo.factory

    slot = private.name.rsplit("-", 1)[-1]
    numbers = itertools.count(1)

    def new_trial_key() -> str:
        return f"trial-counts-{slot}-{next(numbers):06d}"

    for module in (storages.configured, storages.zeo.factory):
        module.new_trial_key = new_trial_key  # type: ignore[attr-defined]
