"""What keeps the two pytest-xdist workers of `pytest --all -n 2` apart:
each has a token of its own (tests/conftest.py), by which the leak checks
know its servers and locust processes and tests/support/netns.py names its
network namespaces; whatever a worker starts carries the worker's.  And
the tests whose module fixture runs every case at once stay on one."""

from __future__ import annotations

import importlib

from tests.conftest import (
    ONE_WORKER,
    TOKEN_VAR,
    TOKEN_WORKER_VAR,
    one_worker_scope,
    session_token,
)

CONTROLLER = "0123456789abcdef" * 2


def worker_environ(worker: str) -> dict[str, str]:
    """A worker's environment as pytest-xdist starts it: the controller's
    token inherited, PYTEST_XDIST_WORKER set."""
    return {TOKEN_VAR: CONTROLLER, "PYTEST_XDIST_WORKER": worker}


def test_each_worker_takes_a_token_of_its_own() -> None:
    gw0, gw1 = worker_environ("gw0"), worker_environ("gw1")
    first, second = session_token(gw0), session_token(gw1)
    assert CONTROLLER not in (first, second)
    # netns names carry the first six digits.
    assert first[:6] != second[:6]
    assert gw0[TOKEN_VAR] == first and gw0[TOKEN_WORKER_VAR] == "gw0"


def test_what_a_worker_starts_keeps_the_workers_token() -> None:
    """A pytest inside a worker's test inherits its environment, with or
    without PYTEST_XDIST_* (a release's pytest children drop them): its
    servers are the worker's."""
    environ = worker_environ("gw0")
    token = session_token(environ)
    assert session_token(dict(environ)) == token
    dropped = {k: v for k, v in environ.items() if not k.startswith("PYTEST_XDIST_")}
    assert session_token(dropped) == token


def test_a_run_in_one_process_keeps_or_makes_one() -> None:
    assert session_token({TOKEN_VAR: CONTROLLER}) == CONTROLLER
    environ: dict[str, str] = {}
    token = session_token(environ)
    assert environ == {TOKEN_VAR: token} and len(token) == 32


def test_the_one_worker_tests_are_each_one_unit_of_work() -> None:
    """Each ONE_WORKER prefix names a test function that exists (a rename
    would silently split it over both workers again) and takes every
    parametrization of it; any other test is a unit of its own."""
    for prefix in ONE_WORKER:
        path, _, function = prefix.rstrip("[").partition("::")
        module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
        assert callable(getattr(module, function)), prefix
        assert one_worker_scope(prefix + "any case]") == prefix
    alone = "tests/cli/test_routes.py::test_route_in_process[x]"
    assert one_worker_scope(alone) == alone


def test_what_a_worker_starts_is_no_xdist_worker() -> None:
    """Under `pytest -n 2` (CI's run) a pytest that a test starts must not
    read as an xdist worker: pytest-benchmark then refuses --benchmark-only
    (tests/conftest.py drops PYTEST_XDIST_* once the token is taken)."""
    import os

    assert not [k for k in os.environ if k.startswith("PYTEST_XDIST_")]
