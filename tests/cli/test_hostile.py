"""Issue 28's cases of the encoding and closed pipes, escape sequences,
malformed files, the environment, resource limits and history
directories, as tests: each case of tests/support/hostile.py of these kinds is run
as the probe runs it (tools/probe_failures.py) and must be handled: the
exit status and line it allows, no traceback, its inputs unchanged,
nothing left in TMPDIR, no process left, its own checks.

The inputs are made when a case first asks for them, by the checkout's own
commands (tests/hostile_files.Bases).  A case's bound is a hang detector;
here it is a generous one, so that a loaded machine does not fail a test
that holds the command to its status and its line, not to a time.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.hostile import Case, cases, run_case
from tests.support.hostile_files import MALFORMED, Bases
from tests.support.hostile_proc import Checkout

ROOT = Path(__file__).resolve().parents[2]
CHECKOUT = Checkout(ROOT)

KINDS = (
    "encoding/pipe",
    "escape sequences",
    "malformed file",
    "environment",
    "resource limits",
    "history dirs",
    "cluster peers",
)
#: Cases of these kinds another part of issue 28 handles (run --counts'
#: cache directory, scenarios/counts/), by a part of their id.
ELSEWHERE = (
    "run --counts: HOME under /proc",
    "run --counts: VFAB_CACHE_DIR under /proc",
)
#: The bound of a case here, in seconds (the probe's: 90).
BOUND = 300.0


def bases_of(case: Case) -> set[str]:
    """The base files and data sets a case's placeholders copy or serve
    (tests/hostile_setups.resolve), and those they are made from."""
    out: set[str] = set()
    for key in re.findall(r"\{([^{}]+)\}", case.args):
        if key.startswith("runs"):
            first, *extras = key.split("+")
            out |= {first.partition("=")[2] or "run.json", *extras}
        elif key.startswith("data/"):
            out.add(key[5:])
        elif key in ("served", "zeo6"):
            out.add("file")
        elif key not in ("in", "out", "long-name", "long-path", "silent"):
            out.add(key)
    return out | {MALFORMED[name][0] for name in out if name in MALFORMED}


def marks(case: Case) -> list[pytest.MarkDecorator]:
    """What the case starts, as the tiers' markers: vfab-bench always; a
    server (runzeo) for the commands that share a storage and the bases
    that need one; valgrind for counts."""
    bases = bases_of(case)
    words = set(case.args.split())
    out = [pytest.mark.subprocess]
    sharing = {"verify", "scale", "serve", "zeoloop", "release", "zeo", "{served}"}
    if words & sharing or bases & {"scale.json", "verify.json"}:
        out.append(pytest.mark.server)
    if "--counts" in words or "counts.json" in bases:
        out.append(pytest.mark.valgrind)
    return out


def chosen() -> list[Case]:
    return [
        c
        for c in cases()
        if c.kind in KINDS and not any(part in c.id for part in ELSEWHERE)
    ]


@pytest.fixture(scope="module")
def bases(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bases]:
    yield Bases(CHECKOUT, tmp_path_factory.mktemp("hostile-bases"))


@pytest.mark.parametrize(
    "case", [pytest.param(c, id=c.id, marks=marks(c)) for c in chosen()]
)
def test_case_is_handled(case: Case, bases: Bases, tmp_path: Path) -> None:
    if CHECKOUT.problem():
        pytest.skip(CHECKOUT.problem())
    tmp_path.chmod(0o755)  # as the probe's scratch: readable to its helpers
    result = run_case(dataclasses.replace(case, bound=BOUND), CHECKOUT, bases, tmp_path)
    if result.outcome is None:
        pytest.skip(result.skipped)
    assert not result.problems(), (result.problems(), result.err_tail)


def test_every_case_of_these_kinds_is_here_or_elsewhere() -> None:
    """A case added to the matrix under these kinds is run here unless it
    is named as handled elsewhere, and nothing is left out by a typo."""
    ids = [c.id for c in cases() if c.kind in KINDS]
    assert all(any(part in i for i in ids) for part in ELSEWHERE)
    assert len(chosen()) == len(ids) - len(ELSEWHERE)


def test_what_the_machine_refuses_is_named() -> None:
    """Issue 35's limits at the edge: a file-size limit, too many open
    files and no usable temporary directory are each a line that names
    them, exit 2 (not Python's words with '--debug shows where')."""
    import errno

    from scenarios.cli import edge

    cases = {
        OSError(errno.EFBIG, "File too large"): "file-size limit",
        OSError(errno.EMFILE, "Too many open files"): "too many open files",
        FileNotFoundError(
            errno.ENOENT, "No usable temporary directory found in ['/x']"
        ): "set TMPDIR",
    }
    for error, words in cases.items():
        assert words in edge.describe(error)
        assert edge.environment_error(error) is not None
        assert edge.status_of(error) == 2
