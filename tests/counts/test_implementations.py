"""Nothing the suite cannot see changes what is counted: PURE_PYTHON
reaches the counted child and each file records, per package with a C
accelerator, the implementation the measuring process loaded (told from
the loaded classes, not from the variable); a variable that chooses the
interpreter's own implementation is refused by a count run in one line."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scenarios.counts import fixed
from scenarios.counts.model import CountRun
from scenarios.results import metadata
from tests.support.cli_helpers import assert_bad_input, run_cli

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = set(metadata.ACCELERATED)


def test_pure_python_reaches_a_counted_child(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert fixed.CARRIED_VARIABLES == metadata.IMPLEMENTATION_VARIABLES
    monkeypatch.setenv("PURE_PYTHON", "1")
    assert fixed.child_environment(tmp_path)["PURE_PYTHON"] == "1"


@pytest.mark.parametrize("name", sorted(fixed.REFUSED_VARIABLES))
def test_a_count_run_refuses_a_variable_it_cannot_show(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.setenv(name, "malloc" if name == "PYTHONMALLOC" else "1")
    r = run_cli(capsys, "run", "--counts", "--storage", "memory")
    assert_bad_input(r, f"{name} is set")


def loaded(env: dict[str, str]) -> dict[str, str | None]:
    code = (
        "import json; from scenarios.results.metadata import implementations; "
        "print(json.dumps(implementations()))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**env, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(done.stdout)  # type: ignore[no-any-return]


@pytest.mark.subprocess
def test_the_implementation_is_told_from_what_is_loaded() -> None:
    import os

    base = {k: v for k, v in os.environ.items() if k != "PURE_PYTHON"}
    c = loaded(base)
    if set(c.values()) != {"C"}:
        pytest.skip(f"not every accelerator is built here: {c}")
    assert loaded({**base, "PURE_PYTHON": "1"}) == dict.fromkeys(PACKAGES, "Python")


@pytest.mark.subprocess
@pytest.mark.valgrind
def test_a_count_run_under_pure_python_counts_and_records_python(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for tool in ("valgrind", "strace"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} not installed (apt-get install valgrind strace)")
    monkeypatch.setenv("PURE_PYTHON", "1")
    out = tmp_path / "counts.json"
    r = run_cli(
        capsys, "run", "--counts", "--storage", "memory", "--rows", "2000",
        "--repeat", "1", "--warmups", "0", "--json", str(out),
    )  # fmt: skip
    assert r.status == 0, r.err
    meta = CountRun.load(out).metadata
    assert meta["implementations"] == dict.fromkeys(PACKAGES, "Python")
    assert meta["implementation_variables"] == {"PURE_PYTHON": "1"}
