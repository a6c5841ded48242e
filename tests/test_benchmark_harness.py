"""The benchmark harness itself (tests/benchmarks/options.py, conftest.py):
run pytest in a subprocess as a user would."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.subprocess

PROJECT = Path(__file__).resolve().parent.parent


def pytest_run(*args: str, cwd: Path = PROJECT) -> subprocess.CompletedProcess[str]:
    # A pytest of its own, not a pytest-xdist worker (under pytest -n this
    # process is one): pytest-benchmark reads PYTEST_XDIST_WORKER as xdist
    # on and refuses --benchmark-only.
    env = {
        k: v
        for k, v in os.environ.items()
        if k != "PYTEST_ADDOPTS" and not k.startswith("PYTEST_XDIST_")
    }
    env["PYTHONPATH"] = str(PROJECT)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_an_unknown_storage_fails_listing_the_choices() -> None:
    done = pytest_run("tests/benchmarks", "--storage", "zoe", "--co")
    assert done.returncode == 4, done.stdout + done.stderr
    assert "invalid choice: 'zoe'" in done.stderr
    assert "memory" in done.stderr and "zeo" in done.stderr


def test_benchmark_only_measures_despite_the_ini_disable(tmp_path: Path) -> None:
    """pyproject's addopts say --benchmark-disable; --benchmark-only on the
    command line must still measure (and write JSON with extra_info)."""
    out = tmp_path / "out.json"
    done = pytest_run(
        "tests/benchmarks/test_micro.py",
        "-k",
        "new_oid or hot_read",
        "--benchmark-only",
        "--storage",
        "memory",
        "--storage",
        "mapping",
        "--benchmark-min-rounds=3",
        "--benchmark-max-time=0.01",
        f"--benchmark-json={out}",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    benchmarks = json.loads(out.read_text())["benchmarks"]
    names = sorted(b["name"] for b in benchmarks)
    # memory has no storage to allocate oids: skipped, not measured
    assert names == [
        "test_hot_read[mapping]",
        "test_hot_read[memory]",
        "test_new_oid[mapping]",
    ]
    for b in benchmarks:
        assert b["stats"]["rounds"] >= 3
        assert b["params"]["storage"] == b["extra_info"]["storage"]
        assert b["extra_info"]["size"] == "small"
        # CPU of this process per round (or per pass): some, and no more
        # than the slowest round's wall time allows.
        assert 0 < b["extra_info"]["cpu_s"] <= 2 * b["stats"]["max"]
    assert "memory has no database" in done.stdout


def test_typing_benchmark_disable_still_wins() -> None:
    done = pytest_run(
        "tests/benchmarks", "--benchmark-only", "--benchmark-disable", "--co"
    )
    assert done.returncode == 4
    assert "Can't have both --benchmark-only and --benchmark-disable" in done.stderr


def test_a_failing_benchmark_stops_its_server(tmp_path: Path) -> None:
    """The store fixture closes the store when the test fails, and the
    runzeo it was on (the session's pool, shared by every zeo benchmark) is
    stopped before the session ends."""
    pid_file, gone_file = tmp_path / "pid", tmp_path / "gone"
    (tmp_path / "conftest.py").write_text(
        textwrap.dedent(
            f"""
            import os

            from tests.conftest import pytest_addoption, pytest_configure
            from tests.benchmarks.conftest import (
                pytest_generate_tests, running_factories, store,
            )

            def pytest_sessionfinish(session):
                # After every fixture's teardown, running() included, while
                # this process lives: runzeo is its child, so stopped means
                # reaped, no /proc entry (at exit the kernel would kill it
                # anyway).
                pid = int(open({str(pid_file)!r}).read())
                with open({str(gone_file)!r}, "w") as f:
                    f.write(str(not os.path.exists(f"/proc/{{pid}}")))
            """
        )
    )
    (tmp_path / "test_failing.py").write_text(
        textwrap.dedent(
            f"""
            def test_fails(store, storage):
                with open({str(pid_file)!r}, "w") as f:
                    f.write(str(store.server.process.pid))
                raise RuntimeError("a benchmark broke")
            """
        )
    )
    done = pytest_run("--storage", "zeo", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "a benchmark broke" in done.stdout
    assert "1 failed" in done.stdout, done.stdout
    assert gone_file.read_text() == "True"


def test_benchmark_histogram_works_after_bootstrap(tmp_path: Path) -> None:
    """./bootstrap installs the histogram extra (pygal): --benchmark-histogram,
    as docs/benchmarks.md shows it, writes one SVG per group."""
    prefix = tmp_path / "bench"
    done = pytest_run(
        "tests/benchmarks/test_micro.py",
        "-k",
        "new_oid",
        "--benchmark-only",
        "--storage",
        "mapping",
        "--benchmark-min-rounds=3",
        "--benchmark-max-time=0.01",
        f"--benchmark-histogram={prefix}",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    svgs = list(tmp_path.glob("bench*.svg"))
    assert svgs, done.stdout
    assert all(p.read_text().lstrip().startswith("<?xml") for p in svgs)


def test_tox_zeo_says_what_it_measures_and_nothing_of_berkeleydb(
    tmp_path: Path,
) -> None:
    """tox -e zeo's command, in an environment without berkeleydb (tox's
    zeo has no bdb extra; a package that fails to import stands in): no
    "No module named 'berkeleydb'", no "tier: all" (issue 46)."""
    missing = tmp_path / "berkeleydb"
    missing.mkdir()
    (missing / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'berkeleydb'\", "
        "name='berkeleydb')\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(PROJECT)]))
    env.pop("PYTEST_ADDOPTS", None)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "tests/benchmarks",
         "--all", "--benchmark-only", "--storage", "zeo", "--collect-only"],
        cwd=PROJECT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "berkeleydb" not in done.stdout + done.stderr
    assert "tier: all" not in done.stdout
    assert "benchmarks: every phase and micro-benchmark on zeo" in done.stdout


def test_bootstrap_says_what_pip_is_at_while_it_installs(tmp_path: Path) -> None:
    """./bootstrap's minute of pip is not a minute of silence: every TICK
    seconds a line says how long and what pip is at, and the end says it
    is ready (issue 46).  A checkout whose .venv's python is a stand-in
    that takes 3 s over each pip command (a real install needs the package
    index and minutes); the script itself is the checkout's."""
    import shutil

    for name in ("bootstrap", "setup.cfg", "pyproject.toml"):
        shutil.copy(PROJECT / name, tmp_path / name)
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    python = bin_dir / "python"
    python.write_text(
        "#!/bin/sh\n"
        'if [ "$1 $2" = "-m pip" ]; then\n'
        '  echo "Collecting ZODB>=6"; sleep 3\n'
        '  echo "Installing collected packages: ZODB"; sleep 1\n'
        "fi\n"
    )
    python.chmod(0o755)
    env = dict(os.environ, VFAB_EXTRAS="test", VFAB_BOOTSTRAP_TICK="1")
    done = subprocess.run(
        ["bash", str(tmp_path / "bootstrap")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert any(
        re.fullmatch(r"bootstrap: installing: \d+ s, at: Collecting ZODB>=6", x)
        for x in lines
    ), lines
    assert any(
        x.startswith("bootstrap: installing: ") and "Installing" in x for x in lines
    )
    assert re.fullmatch(r"bootstrap: ready in \d+ s: .*", lines[-1]), lines
