"""A TMPDIR that fills up (issue 46): the line names the temporary
directory, TMPDIR, and what to do, never a bare "No space left on device".
A small tmpfs is mounted in a mount namespace of the command's own
(unshare -m: root), so nothing outside it sees the full disk."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def unavailable() -> str | None:
    """Why a private tmpfs cannot be mounted here (None: it can)."""
    if os.geteuid() != 0:
        return "mounting a tmpfs in a mount namespace needs root"
    if shutil.which("unshare") is None:
        return "no `unshare` command (util-linux)"
    return None


@pytest.mark.netns
def test_a_full_tmpdir_is_named_with_what_to_do(tmp_path: Path) -> None:
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    small = tmp_path / "small tmp"
    small.mkdir()
    script = 'mount -t tmpfs -o size=200k tmpfs "$1" && shift && exec "$@"'
    env = dict(os.environ, TMPDIR=str(small), PYTHONPATH=str(ROOT))
    done = subprocess.run(
        ["unshare", "-m", "sh", "-c", script, "sh", str(small), sys.executable,
         "-m", "scenarios.cli", "matrix", "--storage", "file", "--quick", "-q"],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=300,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("vfab-bench: error: no space left on device")
    assert f"temporary directory, TMPDIR, {small}" in lines[0]
    assert "set TMPDIR to a directory on a disk with room" in lines[0]
    assert list(small.iterdir()) == []  # the mount is gone with its namespace
