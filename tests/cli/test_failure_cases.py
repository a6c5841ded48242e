"""Issue 28's failure paths of run --counts, zeoloop, compare, release and
--pyperf, as tests: each of these cases of tests/support/hostile.py is run as the
probe runs it (tools/probe_failures.py) and must be handled: the exit
status and line it allows, no traceback, its inputs unchanged, nothing
left in TMPDIR, no process left, its own checks.

The inputs are made on demand by the checkout's own commands, only those
a chosen case names.  A case whose bound is a hang's (a valgrind that
never returns) runs under a longer one here: the test holds the command
to its status and line, not to a time.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import json
import shutil
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from tests.support.hostile import Result, cases, run_case
from tests.support.hostile_files import QUICK, many_trials
from tests.support.hostile_proc import HELPER_VAR, Checkout, run_to_end
from tests.support.tiers import starts

ROOT = Path(__file__).resolve().parents[2]
CHECKOUT = Checkout(ROOT)


class Bases(Mapping[str, Path]):
    """The base files and data sets of tests/support/hostile_files.py, each made the
    first time a case asks for it."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.tmp = directory / "tmpdir"  # not .../tmp: see hostile_work.Work
        self.tmp.mkdir(parents=True)
        self.made: dict[str, Path] = {}
        self.lock = threading.RLock()  # cases run two at a time

    def _cli(self, *args: str) -> None:
        env = CHECKOUT.env(HELPER_VAR, "bases", self.tmp)
        run_to_end(CHECKOUT.cli(*args), env, self.directory)

    def _make(self, name: str) -> Path:
        path = self.directory / name
        if name == "run.json":
            self._cli("run", "--storage", "mapping,memory", *QUICK, "--json", str(path))
        elif name == "file":
            self._cli("populate", "-q", "--storage", "file", "--path", str(path))
        elif name in ("big-old.json", "big-new.json"):
            old, new = many_trials(json.loads(self["run.json"].read_text()))
            (self.directory / "big-old.json").write_text(json.dumps(old))
            (self.directory / "big-new.json").write_text(json.dumps(new))
        else:
            raise KeyError(name)
        return path

    def __getitem__(self, name: str) -> Path:
        with self.lock:
            if name not in self.made:
                self.made[name] = self._make(name)
            return self.made[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.made)

    def __len__(self) -> int:
        return len(self.made)


@pytest.fixture(scope="module")
def bases(tmp_path_factory: pytest.TempPathFactory) -> Bases:
    if CHECKOUT.problem():
        pytest.skip(CHECKOUT.problem())
    return Bases(tmp_path_factory.mktemp("bases"))


def needs(*tools: str) -> None:
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        installed = "not installed (apt-get install valgrind strace)"
        pytest.skip(f"{', '.join(missing)} {installed}")


COUNTS = ("valgrind", "vgdb", "strace")
#: A hang's bound here: the test holds the command to its status and line
#: (a valgrind that never returns is stopped after 30 s plus 40 times the
#: native run; compare says which permutation test it ran; zeoloop stops a
#: client stuck on a stopped server), not to a time.
LONG = 600.0
SUB, SERVER, VALGRIND = (
    pytest.mark.subprocess,
    pytest.mark.server,
    pytest.mark.valgrind,
)


def handled(
    case_id: str,
    *marks: pytest.MarkDecorator,
    tools: tuple[str, ...] = (),
    bound: float | None = None,
) -> object:
    """A case that must be handled; *marks*: what it starts besides
    vfab-bench; *tools* it needs; its *bound* here (None: the case's)."""
    return pytest.param(case_id, tools, bound, marks=[SUB, *marks], id=case_id)


HANDLED = [
    handled(
        "[hang] run --counts: a valgrind that never returns",
        VALGRIND,
        tools=COUNTS,
        bound=LONG,
    ),
    handled(
        "[environment] run --counts: a valgrind that does nothing (exit 0)",
        VALGRIND,
        tools=COUNTS,
    ),
    handled(
        "[hang] compare: two runs of 10,000 trials a cell, 3 cells (bound 30 s)",
        bound=LONG,
    ),
    handled(
        "[hang] zeoloop: --target whose runzeo is SIGSTOPped during the load",
        SERVER,
        bound=LONG,
    ),
    handled(
        "[zeoloop reconnect] zeoloop: runzeo SIGKILLed, then served again on its port",
        SERVER,
    ),
    handled("[environment] run --counts: HOME under /proc", tools=COUNTS),
    handled("[environment] run --counts: VFAB_CACHE_DIR under /proc", tools=COUNTS),
    handled(
        "[signals] run --counts: a run that ends leaves nothing in TMPDIR",
        VALGRIND,
        tools=COUNTS,
    ),
    handled("[signals] run --counts: -q: nothing on stderr", VALGRIND, tools=COUNTS),
    handled(
        "[signals] run --counts: SIGKILLed while valgrind never returns",
        VALGRIND,
        tools=COUNTS,
    ),
    handled("[signals] run: a CPU-time limit (SIGXCPU) on file and zeo", SERVER),
    handled("[signals] release: SIGTERM in its 2000-table part", SERVER, VALGRIND),
    # A quick release of mapping and zeo takes about 110 s idle (its counts
    # settle the type cache before each phase): the signal comes after 90 s.
    handled(
        "[signals] release: SIGTERM in its concurrency part",
        SERVER,
        VALGRIND,
        bound=LONG,
    ),
    handled("[release paths] release: --out a relative path", VALGRIND, bound=LONG),
    handled("[release paths] release: --out on a full file system"),
    handled("[release paths] run --pyperf: FILE.json.gz"),
    handled("[release paths] report --pyperf: FILE.json.gz"),
]

#: Run by the probe, not here: "[signals] release: SIGHUP in its concurrency
#: part" takes the path of the SIGTERM case above (Terminated, 128 + the
#: signal; tests/cli/test_signals.py holds SIGHUP's 129 for every command) and
#: 36 s of the full run.
BY_ID = {c.id: c for c in cases()}

#: The cases that spend their time waiting on a bound of the product's (a
#: valgrind that never returns is stopped after 30 s plus 40 times the
#: native run; a client of a SIGSTOPped runzeo after 35 s), about 55 s each
#: with a few seconds of work at their start: each runs beside the others,
#: which keep two at a time.
WAITING = {
    "[hang] run --counts: a valgrind that never returns",
    "[hang] zeoloop: --target whose runzeo is SIGSTOPped during the load",
}

#: The case whose clients must reconnect within zeoloop's own bounds after
#: its server is killed and served again: after the others, beside nothing
#: but the waiting ones (it missed once of five among three at a time).
ALONE = {
    "[zeoloop reconnect] zeoloop: runzeo SIGKILLed, then served again on its port",
}


@pytest.fixture(scope="module")
@starts("subprocess")
def outcomes(
    request: pytest.FixtureRequest,
    bases: Bases,
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, Result]:
    """The result of every case of test_handled this session selected whose
    tools are here, once, as the first test asks: the WAITING ones each
    beside the rest, which run two at a time (as the probe runs them), then
    the ALONE ones."""
    wanted = []
    for item in request.session.items:
        if item.module is request.module and item.originalname == "test_handled":
            params = item.callspec.params
            if all(shutil.which(t) for t in params["tools"]):
                wanted.append((params["case_id"], params["bound"]))

    def run(case_id: str, bound: float | None) -> Result:
        case = BY_ID[case_id]
        if bound is not None:
            case = dataclasses.replace(case, bound=bound)
        scratch = tmp_path_factory.mktemp("case")
        scratch.chmod(0o755)  # as /tmp is: a case's helpers may run as postgres
        return run_case(case, CHECKOUT, bases, scratch)

    waiting = [w for w in wanted if w[0] in WAITING]
    alone = [w for w in wanted if w[0] in ALONE]
    working = [w for w in wanted if w not in waiting and w not in alone]
    with concurrent.futures.ThreadPoolExecutor(max(1, len(waiting))) as waits:
        waited = {w[0]: waits.submit(run, *w) for w in waiting}
        with concurrent.futures.ThreadPoolExecutor(2) as works:
            results = dict(
                zip(
                    (w[0] for w in working),
                    works.map(lambda w: run(*w), working),
                    strict=True,
                )
            )
        results |= {w[0]: run(*w) for w in alone}
        return results | {case_id: f.result() for case_id, f in waited.items()}


# All on one pytest-xdist worker (tests/conftest.py's ONE_WORKER): outcomes
# runs every case the session selected, so a second worker would run them all
# again beside the first.
@pytest.mark.parametrize(("case_id", "tools", "bound"), HANDLED)
def test_handled(
    case_id: str,
    tools: tuple[str, ...],
    bound: float | None,
    outcomes: dict[str, Result],
) -> None:
    needs(*tools)
    result = outcomes[case_id]
    if result.outcome is None:
        pytest.skip(result.skipped)
    assert result.problems() == [], result.err_tail
