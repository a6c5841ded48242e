"""The tiers (tests/support/tiers.py): the markers pyproject.toml registers, which
marker a child process asks for, and a run inside this test showing that a
plain run leaves the marked tests out, --all and -m bring them back, an
unmarked test that starts a child process or listens on a port fails, and
CI runs the README's full test command."""

from __future__ import annotations

import configparser
import re
import sys
from pathlib import Path

import pytest

from tests.support.tiers import TIERS, marker_for

PY = sys.executable
ROOT = Path(__file__).resolve().parent.parent


def test_pyproject_registers_the_tiers_and_nothing_else() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11
    with open(Path(__file__).resolve().parent.parent / "pyproject.toml", "rb") as f:
        lines = tomllib.load(f)["tool"]["pytest"]["ini_options"]["markers"]
    assert dict(line.split(": ", 1) for line in lines) == TIERS


@pytest.mark.parametrize(
    ("argv", "marker"),
    [
        ([PY, "-m", "scenarios.cli", "run"], "subprocess"),
        (["/usr/bin/gcc", "-shared", "x.c"], "subprocess"),
        ([PY, "-m", "ZEO.runzeo", "-C", "zeo.conf"], "server"),
        (
            ["runuser", "-u", "postgres", "--", "/usr/lib/postgresql/15/bin/initdb"],
            "server",
        ),
        (["/usr/sbin/mariadbd", "--no-defaults"], "server"),
        (["valgrind", "--tool=callgrind", PY, "-c", "pass"], "valgrind"),
        (["strace", "-f", PY], "valgrind"),
        (
            ["/x/site-packages/playwright/driver/node", "/x/cli.js", "run-driver"],
            "browser",
        ),
        (["/usr/bin/chromium", "--headless"], "browser"),
        (["ip", "netns", "add", "vfab"], "netns"),
        (["unshare", "--net", "sh"], "netns"),
        ([PY, "-m", "pip", "install", "ZODB==6.2"], "pypi"),
        (["os.fork()"], "subprocess"),
    ],
)
def test_a_child_process_asks_for_the_marker_of_what_it_is(
    argv: list[str], marker: str
) -> None:
    assert marker_for(argv) == marker


INNER = """
import socket
import subprocess

import pytest

def test_quick():
    pass

@pytest.mark.server
def test_marked_server():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()

@pytest.mark.subprocess
def test_marked_child():
    subprocess.run(["true"], check=True)

def test_unmarked_child():
    subprocess.run(["true"], check=True)

def test_unmarked_spawn_without_an_audit_event():
    # multiprocessing's way (spawn, forkserver): no subprocess.Popen event
    import multiprocessing.util, os, sys
    argv = [sys.executable, "-c", "pass"]
    pid = multiprocessing.util.spawnv_passfds(os.fsencode(sys.executable), argv, [])
    assert os.waitpid(pid, 0)[1] == 0

def test_unmarked_listener():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()

def test_unmarked_busy_port(busy_port):
    assert busy_port > 0

@pytest.mark.server
def test_child_marked_as_something_else():
    subprocess.run(["true"], check=True)
"""


@pytest.fixture
def inner(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini(
        "[pytest]\nmarkers =\n"
        + "".join(f"    {name}: {text}\n" for name, text in TIERS.items())
    )
    pytester.makepyfile(test_inner=INNER)
    return pytester


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """pytest in this process with tests/support/tiers.py as its plugin (and not
    pytest-benchmark, which asks git about the checkout as it starts)."""
    return pytester.runpytest(
        "-p", "tests.support.tiers", "-p", "no:benchmark", "-p", "no:cacheprovider",
        "-rA", *args,
    )  # fmt: skip


def outcomes(result: pytest.RunResult) -> dict[str, str]:
    """Test name -> PASSED or FAILED, from the summary -rA writes."""
    out = {}
    for line in result.outlines:
        word, _, rest = line.partition(" test_inner.py::")
        if word in ("PASSED", "FAILED") and rest:
            out[rest.split()[0]] = word
    return out


def test_a_plain_run_leaves_the_marked_tiers_out(inner: pytest.Pytester) -> None:
    result = run(inner)
    assert "tier: quick" in result.stdout.str()
    result.assert_outcomes(passed=2, failed=3, deselected=3)
    assert outcomes(result) == {
        "test_quick": "PASSED",
        "test_unmarked_child": "FAILED",
        "test_unmarked_spawn_without_an_audit_event": "FAILED",
        "test_unmarked_listener": "FAILED",
        "test_unmarked_busy_port": "PASSED",
    }
    text = result.stdout.str()
    assert "tier: quick; 3 tests marked server, subprocess" in text
    assert "left out (--all runs them)" in text
    assert "started 'true' without @pytest.mark.subprocess" in text
    assert f"started '{PY} -c pass' without @pytest.mark.subprocess" in text
    assert "a socket listening on ('127.0.0.1'," in text
    assert "without @pytest.mark.server" in text


def test_all_runs_every_tier_and_still_checks(inner: pytest.Pytester) -> None:
    result = run(inner, "--all")
    assert "tier: all" in result.stdout.str()
    assert "left out" not in result.stdout.str()
    result.assert_outcomes(passed=4, failed=4)
    # a marker names what a test starts: server is not subprocess
    assert outcomes(result)["test_child_marked_as_something_else"] == "FAILED"


def test_an_expression_selects_by_itself(inner: pytest.Pytester) -> None:
    result = run(inner, "-m", "server")
    result.assert_outcomes(passed=1, failed=1, deselected=6)
    result = run(inner, "-m", "not subprocess")
    result.assert_outcomes(passed=3, failed=4, deselected=1)


def test_an_index_that_does_not_answer_is_a_reason_without_credentials(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from storages.ports import free_port
    from tests.conftest import index_unreachable

    url = f"http://user:secret@127.0.0.1:{free_port()}/simple/"
    monkeypatch.setenv("PIP_INDEX_URL", url)
    reason = index_unreachable(timeout=5)
    assert reason is not None and reason.startswith("127.0.0.1: ")
    assert "secret" not in reason


def pytest_arguments(line: str) -> list[str]:
    """The arguments of the `python -m pytest` in a command *line* (up to
    a comment, an operator or tox's {posargs})."""
    match = re.search(r"-m pytest((?: [^\s#|&;{]+)*)", line)
    assert match, line
    return match.group(1).split()


def test_ci_runs_the_readmes_test_command() -> None:
    """What CI proves is what a new user gets: .ci/run's pytest is the
    second of the README's two opening commands, and tox -e all's."""
    ci = [
        line
        for line in (ROOT / ".ci" / "run").read_text().splitlines()
        if "-m pytest" in line and not line.lstrip().startswith("#")
    ]
    opening = (ROOT / "README.md").read_text().split("```sh\n")[1].split("```")[0]
    readme = [line for line in opening.splitlines() if "-m pytest" in line]
    tox = configparser.ConfigParser(interpolation=None)
    tox.read(ROOT / "tox.ini")
    assert len(ci) == 1 and len(readme) == 1, (ci, readme)
    command = pytest_arguments(ci[0])
    assert "--all" in command
    assert pytest_arguments(readme[0]) == command
    assert pytest_arguments(tox["testenv:all"]["commands"]) == command
