"""tools/with_hog.py: the hog runs from the line on and is gone after."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.tiers import starts

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "with_hog.py"

pytestmark = pytest.mark.subprocess

#: The command: no hog before its line, then waits (bounded) for the hog,
#: its sibling, and prints the hog's pid.
COMMAND = """
import os, sys, time
from pathlib import Path

def hogs():
    out = []
    for entry in Path("/proc").iterdir():
        try:
            cmd = (entry / "cmdline").read_bytes()
            ppid = [l for l in (entry / "status").read_text().splitlines()
                    if l.startswith("PPid:")][0].split()[1]
        except (OSError, IndexError):
            continue
        if cmd.endswith(b"-c\\0while True: pass\\0") and ppid == str(os.getppid()):
            out.append(entry.name)
    return out

assert not hogs()
print("half way", file=sys.stderr, flush=True)
deadline = time.monotonic() + 60
while not hogs() and time.monotonic() < deadline:
    time.sleep(0.05)
print(" ".join(hogs()))
"""


@starts("subprocess")
def test_the_hog_runs_from_the_line_and_is_stopped() -> None:
    done = subprocess.run(
        [sys.executable, str(TOOL), "--from", "half way", "--",
         sys.executable, "-c", COMMAND],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    pids = done.stdout.split()
    assert len(pids) == 1, done.stdout
    assert "with_hog: 1 hog(s) from" in done.stderr
    assert "hog(s) stopped at" in done.stderr
    assert not os.path.exists(f"/proc/{pids[0]}")


@starts("subprocess")
def test_bad_input_exit_2() -> None:
    done = subprocess.run([sys.executable, str(TOOL), "--from", "x"],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1
    done = subprocess.run([sys.executable, str(TOOL), "--from", "x", "--",
                           "/nonexistent/x"], capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    assert done.returncode == 2 and "cannot run /nonexistent/x" in done.stderr
