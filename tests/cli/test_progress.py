"""scenarios.progress: the numbers only move one way, plain lines are plain,
and a real command draws its bar on a terminal.

The progress object is driven directly with a fake clock (no sleeps, no
timing); one short real command runs under a pseudo-terminal."""

from __future__ import annotations

import io
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest

from scenarios.progress import Progress, duration

ROOT = Path(__file__).resolve().parents[2]
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def pass_(self, seconds: float) -> None:
        self.now += seconds


class Watched:
    """A Progress and every reading of it: total, ETA, share done."""

    def __init__(self, progress: Progress) -> None:
        self.p = progress
        self.totals: list[float] = []
        self.etas: list[float] = []
        self.shares: list[float] = []

    def read(self) -> None:
        self.totals.append(self.p.total)
        eta = self.p.eta()
        if eta is not None:
            self.etas.append(eta)
        self.shares.append(self.p.fraction())


def never_back(values: list[float], up: bool) -> bool:
    pairs = list(zip(values, values[1:], strict=False))
    return all(b >= a for a, b in pairs) if up else all(b <= a for a, b in pairs)


def test_the_count_is_of_work_done_and_the_eta_follows_the_work() -> None:
    """A run's shape: warmups, full rounds whose trials get slower and
    faster (the machine's modes), a budget that becomes a floor, top-up
    rounds up to a cap known at the start.  The total never moves, the
    count is of trials done, the share never goes back, and the ETA is
    never 0:00 while a trial is in hand."""
    clock = FakeClock()
    lines: list[str] = []
    w = Watched(Progress(lines.append, bar=False, clock=clock, unit="trials"))
    p = w.p
    p.plan(18, extra_s=20, required=9)
    w.read()
    durations = [1, 1, 1, 0.5, 0.5, 0.5, 4, 4, 4]  # slow at the end: ETA rises
    for i, d in enumerate(durations):
        p.step(f"trial {i}")
        assert p.where().startswith(f"{i} of at most 18 trials, ETA ")
        for _ in range(4):
            clock.pass_(d / 4)
            p.status("a phase")
            w.read()
            assert i == 0 or p.eta() >= 1.0  # None ("?") before one ended
        p.advance()
        w.read()
        if i == 2:
            p.not_before(5)
            w.read()
    p.plan(3)  # smaller than done: ignored
    w.read()
    for _trial in range(3):  # top-up trials count within the planned total
        p.step("top-up")
        clock.pass_(0.3)
        w.read()
        assert p.eta() is not None and p.eta() >= 1.0
        p.advance()
        w.read()
    assert set(w.totals) == {18}
    assert never_back(w.shares, up=True), w.shares
    assert p.done == 12 and p.eta() == 0.0
    assert not never_back(w.etas, up=False)  # the slow trials raised it


def test_an_estimate_that_rises_is_shown() -> None:
    """Fast steps, then a step far slower: the ETA rises with it, and while
    the slow step overruns it is never 0:00."""
    clock = FakeClock()
    p = Progress(lambda _: None, bar=False, clock=clock)
    p.plan(4)
    for _ in range(2):
        p.step("fast")
        clock.pass_(1)
        p.advance()
    first = p.eta()
    assert first == 2.0  # 2 steps left at 1 s each
    p.step("slow")
    clock.pass_(5)  # the step in hand overruns its estimate...
    assert p.eta() == 1.0 + 1.0  # ...and is not done: a share of it, one more
    clock.pass_(15)
    assert p.eta() == 2.0 + 1.0  # 10% of its 20 s so far
    p.advance()
    assert p.eta() == 22 / 3  # what the steps took, 22 s for 3
    assert p.steps == [("fast", 1.0, 1.0), ("fast", 1.0, 1.0), ("slow", 1.0, 20.0)]


def test_a_prior_weighs_a_tenth_of_the_work() -> None:
    """verify's shape: a plan in seconds (1 s a unit); a first step far
    faster than planned does not bring the ETA down to nothing."""
    clock = FakeClock()
    p = Progress(lambda _: None, bar=False, clock=clock)
    p.plan(200, unit_s=1.0)
    p.step("scenarios", 5)
    clock.pass_(0.5)
    p.advance()
    # (0.5 s measured + 20 units at 1 s) / (5 + 20) units: 0.82 s a unit
    assert p.eta() == pytest.approx(195 * 20.5 / 25)


def test_a_prior_gives_an_eta_before_any_step_ends() -> None:
    clock = FakeClock()
    p = Progress(lambda _: None, bar=False, clock=clock)
    assert p.eta() is None
    p.plan(3, unit_s=10)
    p.step("point 1")
    clock.pass_(4)
    assert p.eta() == 26.0  # 6 s left of this point, 2 more points


def test_weighted_steps_and_counts() -> None:
    """A sweep's trials weigh their objects; populate counts objects as the
    builders report them."""
    clock = FakeClock()
    p = Progress(lambda _: None, bar=False, clock=clock, unit="objects")
    p.plan(1100)
    p.step("100 objects", 100)
    clock.pass_(1)
    p.advance()
    p.step("1,000 objects", 1000)
    assert p.eta() == 10.0  # 0.01 s per object
    clock.pass_(5)
    p.count(500)
    assert p.where() == "600/1,100 objects, ETA 0:05"


def test_plain_lines_say_where_and_hold_no_control_characters() -> None:
    clock = FakeClock()
    lines: list[str] = []
    p = Progress(lines.append, bar=False, clock=clock, unit="points")
    p.plan(3, unit_s=30)
    p.step("zeo: 1 client")
    p.line("zeo: 1 client", counted=True)
    p.status("measuring")  # bar only
    clock.pass_(30)
    p.advance()
    p.line("  killed the server at 1.0 s")
    p.step("zeo: 2 clients")
    p.line("zeo: 2 clients", counted=True)
    p.close()
    assert lines == [
        "zeo: 1 client (0/3 points, ETA 1:30)",
        "  killed the server at 1.0 s",
        "zeo: 2 clients (1/3 points, ETA 1:00)",
    ]
    assert not any(CONTROL.search(line) for line in lines)


def test_quiet_is_silent() -> None:
    stream = io.StringIO()
    p = Progress(None, stream=stream)
    p.plan(2)
    p.step("a")
    p.line("a line", counted=True)
    p.advance()
    p.close()
    assert stream.getvalue() == "" and not p.bar


def test_the_bar_on_a_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    """bar=True: the one line redrawn in place (carriage return, erase to
    the end), lines written above it, cleared on close.  The bar fits the
    terminal's width: a terminal of 100 columns here, whatever runs the
    test (an 80-column one cuts "warmup")."""
    monkeypatch.setenv("COLUMNS", "100")
    clock = FakeClock()
    stream = io.StringIO()
    p = Progress(print, bar=True, what="scale", stream=stream, clock=clock, tick_s=None)
    p.plan(2, unit_s=10)
    p.step("zeo: 1 client")
    p.status("warmup")
    clock.pass_(5)
    p.line("a result")
    p.close()
    out = stream.getvalue()
    assert "\r" in out and "\x1b[K" in out
    assert "a result\n" in out
    assert "scale " in out and "1/2 ETA" not in out
    assert "zeo: 1 client: warmup" in out and "ETA 0:15" in out
    assert out.endswith("\r\x1b[K")


def test_durations() -> None:
    assert duration(None) == "?"
    assert duration(59.6) == "1:00"
    assert duration(3725) == "1:02:05"
    assert duration(-3) == "0:00"


@pytest.mark.subprocess
def test_a_real_command_draws_its_bar_on_a_terminal(tmp_path: Path) -> None:
    """`sweep` with stderr on a pseudo-terminal: the live bar (the command's
    name, a share, an ETA, redrawn with carriage returns); the table still
    on stdout."""
    leader, follower = pty.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "scenarios.cli", "sweep", "--storage", "mapping"]
            + ["--objects", "50,100", "--preset", "quick"],
            stdout=subprocess.PIPE,
            stderr=follower,
            cwd=tmp_path,
            env=dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="200"),
        )
        os.close(follower)
        follower = -1
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # EIO: the command closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
        out, _ = proc.communicate(timeout=300)
    finally:
        os.close(leader)
        if follower >= 0:
            os.close(follower)
    err = b"".join(chunks).decode()
    assert proc.returncode == 0, err
    assert "\r" in err and "\x1b[K" in err
    assert re.search(r"sweep +\d+% \[[#-]+\] [\d,]+/300 objects, ETA \d+:\d\d", err), (
        err
    )
    assert "mapping btree 50 objects:" in err  # a point's line, above the bar
    assert b"commit wall time per object" in out


def test_populate_counts_its_objects(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """populate's progress: a step per builder, the objects counted as they
    are built (the total planned from the spec, never below what was
    built), and from LINES_FROM_SCALE up a plain line per builder."""
    import storages
    from scenarios.data import dataset
    from vfab.generate import DataSpec, load_catalogue

    monkeypatch.setattr(dataset, "LINES_FROM_SCALE", 1)
    lines: list[str] = []
    p = Progress(lines.append, bar=False, unit="objects")
    spec = DataSpec.for_size("small")
    with storages.get("mapping").open(tmp_path) as store:
        dataset.populate(store, spec, 1, progress=p)
        built = len(store.db.storage)
    assert [line.split(" (")[0] for line in lines] == [
        "populating: users and groups",
        "populating: processes",
        "populating: sequences",
    ]
    assert all(re.search(r"/[\d,]+ objects, ETA ", line) for line in lines), lines
    # The objects the generator reported (BTree nodes aside), near what the
    # plan expected from the spec.
    expected = dataset.expected_objects(spec, load_catalogue())
    assert abs(p.done - expected) < 0.05 * expected and p.done < built
    assert p.total >= p.done


def test_a_long_line_is_wrapped_within_100_columns() -> None:
    """A round of run with six storages, or a point's note: wrapped at
    spaces, the continuation indented; a short line as it was."""
    clock = FakeClock()
    lines: list[str] = []
    p = Progress(lines.append, bar=False, clock=clock, unit="trials")
    p.plan(12)
    each = ", ".join(f"relstorage-sqlite-hp{i} 0.75 s" for i in range(6))
    p.line(f"round 1 of small: {each} in the phases", counted=True)
    p.line("  short")
    (wrapped, short) = lines
    assert short == "  short"
    rows = wrapped.splitlines()
    assert len(rows) > 1 and all(len(r) <= 100 for r in rows)
    assert all(r.startswith("  ") for r in rows[1:])
    assert " ".join(r.strip() for r in rows).endswith("(0/12 trials, ETA ?)")
