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

The matrix is tests/routes.py's (tools/probe_routes.py tallies it).  The
cases run two at a time, once per session, as the first test asks; each
test then asserts its own.
"""

from __future__ import annotations

import concurrent.futures

import pytest

from tests.damaged_databases import make_bases
from tests.routes import Case, Result, cases, run_case

pytestmark = pytest.mark.slow

CASES = cases()


@pytest.fixture(scope="module")
def outcomes(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Result]:
    """The result of every case this session selected, run two at a time."""
    wanted = [
        item.callspec.params["case"]
        for item in request.session.items
        if item.module is request.module and hasattr(item, "callspec")
    ]
    scratch = tmp_path_factory.mktemp("routes")
    families = sorted({case.kind.family for case in wanted})
    bases = make_bases(scratch, families)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        results = pool.map(lambda case: run_case(case, bases, scratch), wanted)
        return {result.case.id: result for result in results}


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_route(case: Case, outcomes: dict[str, Result]) -> None:
    result = outcomes[case.id]
    assert not result.problems(), (result.problems(), result.err)
    if case.kind.expect == 2 and case.route.command != "locust":
        assert result.err.startswith("vfab-bench: error: "), result.err
