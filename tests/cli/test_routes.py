"""Whatever route a database arrives by, a damaged or foreign one is refused
untouched (issue 21, item 1).

Every route (census by --path, URI, --storage-config, zconfig://; run
--storage-uri and --storage-config; populate --overwrite; serve --path;
--target of scale, zeoloop, verify and the locustfile as a URI and as a
ZConfig file; the zlib+file composite) times every kind of damage of its
storage (a Data.fs cut short, with a flipped tid, ending in an unfinished
transaction, with a flipped byte in a transaction header or a data record,
whose index alone is damaged, reached through a symlink loop; a SQLite
file of another application, a damaged one; a damaged Berkeley DB
environment, an empty one): exit status 2, one line on stderr, no
traceback, the bytes and the listing of the directory unchanged.  A whole
database through census's routes is read without a byte changed.

The matrix is tests/support/routes.py's (tools/probe_routes.py tallies it).  The
whole of it runs as child processes, two at a time, once per session, as
the first test asks; each test then asserts its own.  The quick tier runs
one case per route and per kind, each command's main() in this process.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.damaged_databases import STORAGE, make_bases
from tests.support.routes import Case, Result, cases, quick_cases, run_case
from tests.support.tiers import starts

CASES = cases()
QUICK = quick_cases()


@pytest.fixture(scope="module")
@starts("subprocess")
def outcomes(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Result]:
    """The result of every case of test_route this session selected, run
    two at a time."""
    wanted = [
        item.callspec.params["case"]
        for item in request.session.items
        if item.module is request.module
        and getattr(item, "originalname", "") == "test_route"
    ]
    scratch = tmp_path_factory.mktemp("routes")
    families = sorted({case.kind.family for case in wanted})
    bases = make_bases(scratch, families)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        results = pool.map(lambda case: run_case(case, bases, scratch), wanted)
        return {result.case.id: result for result in results}


def check(result: Result) -> None:
    case = result.case
    assert not result.problems(), (result.problems(), result.err)
    if case.kind.expect == 2 and case.route.command != "locust":
        assert result.err.startswith("vfab-bench: error: "), result.err


# All on one pytest-xdist worker (tests/conftest.py's ONE_WORKER): outcomes
# runs every case the session selected, so a second worker would run them all
# again beside the first.
@pytest.mark.subprocess
@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_route(case: Case, outcomes: dict[str, Result]) -> None:
    check(outcomes[case.id])


@pytest.fixture
def bases(populated_sets: Callable[[str], Path]) -> dict[str, Path]:
    """A data set of each family, written by populate in this process."""
    return {family: populated_sets(storage) for family, storage in STORAGE.items()}


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(
            case,
            id=case.id,
            marks=[pytest.mark.subprocess] * case.kind.checked_in_a_child,
        )
        for case in QUICK
    ],
)
def test_route_in_process(case: Case, bases: dict[str, Path], tmp_path: Path) -> None:
    check(run_case(case, bases, tmp_path, in_process=True))


def test_the_quick_cases_take_every_route_and_kind() -> None:
    def route(case: Case) -> str:
        return f"{case.route.command} {case.route.name}"

    routes = {route(case) for case in CASES if case.route.command != "locust"}
    assert {route(case) for case in QUICK} == routes
    assert {case.kind.name for case in QUICK} == {case.kind.name for case in CASES}
    assert len(QUICK) <= len(routes) + 6  # a handful, not the matrix
