"""A release that cannot count says so first, in one line, with what to
install (issue 47): `release --against` with valgrind missing from PATH."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from scenarios.errors import EXIT_INVARIANTS
from tests.cli.test_failure_paths import vfab_bench

RELEASES = Path(__file__).resolve().parents[1] / "data" / "releases"


def path_without_valgrind(bin_dir: Path) -> str:
    """A PATH of one directory: a link to every program on this one but
    valgrind's."""
    bin_dir.mkdir()
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        try:
            names = os.listdir(directory or ".")
        except OSError:
            continue
        for name in names:
            if name.startswith(("valgrind", "vgdb", "callgrind")):
                continue
            link, target = bin_dir / name, Path(directory) / name
            if not link.exists() and os.access(target, os.X_OK):
                link.symlink_to(target)
    return str(bin_dir)


@pytest.mark.subprocess
def test_release_against_without_valgrind_says_why_first(tmp_path: Path) -> None:
    # The last release: a checked-in one, made a release of mapping alone
    # (what the release below runs) so that the two can be compared.
    last = tmp_path / "last"
    shutil.copytree(RELEASES / "a", last)
    summary = json.loads((last / "release.json").read_text())
    summary["metadata"]["storages"] = ["mapping"]
    (last / "release.json").write_text(json.dumps(summary))
    out = tmp_path / "new"
    proc = vfab_bench(
        "release", "--quick", "--storage", "mapping", "--out", str(out),
        "--against", str(last), timeout=900,
        PATH=path_without_valgrind(tmp_path / "bin"),
    )  # fmt: skip
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == EXIT_INVARIANTS, proc.stderr[-2000:]
    first = proc.stderr.splitlines()[0]
    assert first.startswith("vfab-bench release: cannot count: --counts needs "
                            "valgrind, not found: install valgrind"), first  # fmt: skip
    assert "apt-get install valgrind" in first
    assert f"the verdict against {last} will be NOT FULLY CHECKED" in first
    assert "NOT FULLY CHECKED" in proc.stdout.splitlines()[0]
