"""verify's text on checked-in points (tests/data/scale.json: two checked
zeo points): the verdict first, every line within 100 columns, the why
left-aligned under itself; a storage WRONG by a known upstream bug named so
on every line that shows it, and the one exit-status policy
(scenarios.checker.known_bugs.exit_status)."""

from __future__ import annotations

import dataclasses
from importlib import metadata
from pathlib import Path

import pytest

from scenarios.checker import known_bugs
from scenarios.checker.known_bugs import KNOWN_WRONG, exit_status
from scenarios.errors import EXIT_INVARIANTS, EXIT_OK, EXIT_VIOLATIONS
from scenarios.scale.model import ScaleRun
from scenarios.verify import report
from scenarios.verify.runner import StorageVerdict, VerifyConfig
from scenarios.verify.scenarios import ScenarioResult

SCALE = Path(__file__).resolve().parents[1] / "data" / "scale.json"
SCENARIOS = ("readcurrent-then-commit", "conflict-at-vote-then-commit")


def verdicts(storage: str = "relstorage-sqlite") -> list[StorageVerdict]:
    """zeo right (its two points), and *storage* with the same points but
    one of them WRONG (2 phantom writes) and a scenario violated."""
    points = ScaleRun.load(SCALE).points
    wrong = dataclasses.replace(
        points[1],
        storage=storage,
        check=dataclasses.replace(
            points[1].check,
            ok=False,
            counts={"phantom write": 2},
            summary="consistency: 2 violations (2 phantom writes)",
            problems=("phantom write: " + "a long account of it " * 8,),
        ),
    )
    ok = tuple(ScenarioResult(n, "ok", "") for n in SCENARIOS)
    bad = (ScenarioResult(SCENARIOS[0], "violation", "b['x'] is 'failed'"), ok[1])
    return [
        StorageVerdict("zeo", ok, points, planned_s=30, took_s=33),
        StorageVerdict(storage, bad, (points[0], wrong), planned_s=30, took_s=36),
    ]


def test_the_verdict_first_within_100_columns_the_why_left_aligned() -> None:
    text = report.text(verdicts(), detail=True)
    lines = text.splitlines()
    assert lines[0] == "verdict"
    assert lines[1].startswith("  zeo                right: ")
    assert max(len(line) for line in lines) <= 100
    sqlite = [
        i for i, line in enumerate(lines) if line.startswith("  relstorage-sqlite")
    ]
    (first,) = sqlite
    why_at = len("  relstorage-sqlite  ")
    # wrapped lines of the why start where it starts
    following = lines[first + 1]
    if following.strip():
        assert following[:why_at].strip() == "" and following[why_at] != " "
    # then the tables, then the detail (--all), then the time against the plan
    assert text.index("deterministic scenarios") < text.index("contended load")
    assert text.index("contended load") < text.index("relstorage-sqlite, 2 clients:")
    assert "verify took 1:09 of 1:00 planned (1.15x): zeo 0:33 of 0:30" in text
    short = report.text(verdicts())
    assert "relstorage-sqlite, 2 clients:" not in short
    assert "What each point's check found: --all" in short


def test_a_known_upstream_bug_is_named_on_every_line_that_shows_it() -> None:
    installed = metadata.version("RelStorage")
    vs = verdicts()
    sqlite = vs[1]
    if installed != "4.3.0":
        pytest.skip(f"RelStorage {installed}: its SQLite bug is not known there")
    assert sqlite.state() == KNOWN_WRONG and sqlite.ok is False
    assert "known upstream bug: RelStorage 4.3.0" in sqlite.verdict()[1]
    text = report.text(vs, detail=True)
    lines = text.splitlines()
    for i, line in enumerate(lines):
        # a line of relstorage-sqlite's that shows a violation (not the
        # wrapped lines of its verdict, nor the detail under a point's line)
        shows = line.startswith(("relstorage-sqlite", "  relstorage-sqlite")) and (
            "violation" in line or "phantom" in line or " 2 " in line
        )
        if shows and " 0 violations" not in line:
            assert "known upstream bug" in line, (i, line)
    assert lines[2].startswith("  relstorage-sqlite  WRONG, a known upstream bug: ")
    assert exit_status(v.state() for v in vs) == EXIT_OK
    assert sqlite.to_json()["verdict"] == "WRONG"
    assert "docs/relstorage-sqlite.md" in sqlite.to_json()["known_bug"]


def test_one_exit_status_policy() -> None:
    """A WRONG no known bug explains fails; a known one does not (release),
    or does (verify, unless --expect-known-bugs); not checked comes next,
    then errors."""
    other = verdicts("zeo+bdb")[1]
    assert other.state() == "WRONG" and other.known_bug() is None
    assert exit_status(["right", other.state()]) == EXIT_VIOLATIONS
    assert exit_status([KNOWN_WRONG, "not fully checked"]) == EXIT_INVARIANTS
    assert exit_status([KNOWN_WRONG, "errors"]) == 4
    assert exit_status([KNOWN_WRONG, "WRONG"]) == EXIT_VIOLATIONS
    assert exit_status(["right", KNOWN_WRONG]) == EXIT_OK
    # verify's: a known bug fails too, unless the user expects it
    assert exit_status(["right", KNOWN_WRONG], known_fails=True) == EXIT_VIOLATIONS
    assert exit_status(["right", "right"], known_fails=True) == EXIT_OK
    # the version recorded decides: a fixed RelStorage that still fails is WRONG
    assert (
        known_bugs.known_bug("relstorage-sqlite", versions={"RelStorage": "4.4.0"})
        is None
    )


def test_the_plan_counts_every_point_and_the_servers() -> None:
    config = VerifyConfig(storages=("zeo", "relstorage-sqlite"), clients=(2, 8, 16))
    windows, rest = config.estimate()
    assert windows == pytest.approx(60.0)
    assert windows + rest == pytest.approx(2 * config.storage_s())
    assert config.point_s(16) > config.point_s(2)  # clients start, the check grows


def test_the_eta_knows_the_machine_and_is_revised_honestly() -> None:
    """Issue 46: verify's ETA rose while it worked and it ended "3:39 of
    2:14 planned" on a busy machine.  On a machine three times slower than
    the idle one the estimates were made on, what is not a load window
    takes three times as long: the plan says so from the start, the ETA at
    each step is within a tenth of the time really left and does not rise,
    and the run ends near its plan.  The idle plan (what verify printed
    before) falls short."""
    from scenarios.progress import REFERENCE_PROBE_S, Machine, Progress
    from scenarios.verify.runner import WARMUP_S

    config = VerifyConfig(storages=("zeo", "relstorage-sqlite"), clients=(2, 8, 16))
    slow = Machine(probe_s=3 * REFERENCE_PROBE_S, load=0.5, cpus=2)
    assert slow.factor == pytest.approx(3.0)
    # what each step really takes there: set-up and checks 3x, windows as long
    really = [took for _, took in config.steps(3.0)]
    windows, rest = config.estimate(slow.factor)
    idle_windows, idle_rest = config.estimate()
    # the points' warmups are windows too: spent in full, not scaled
    warmups = WARMUP_S * len(config.storages) * len(config.clients)
    assert windows == idle_windows
    assert rest == pytest.approx(3 * idle_rest - 2 * warmups)
    assert "verify: about " in config.plan(slow.factor)

    now = [0.0]
    shown = Progress(None, clock=lambda: now[0], tick_s=None)
    shown.plan(windows + rest, unit_s=1.0)
    etas = []
    for i, (label, weight) in enumerate(config.steps(slow.factor)):
        shown.step(label, weight)
        left = sum(really[i:])
        eta = shown.eta()
        assert eta is not None and abs(eta - left) <= 0.1 * left, (label, eta, left)
        etas.append(eta)
        now[0] += really[i]
        shown.advance()
    assert all(b <= a + 1.0 for a, b in zip(etas, etas[1:], strict=False)), etas
    assert now[0] == pytest.approx(windows + rest)  # ends as planned
    assert idle_windows + idle_rest < 0.75 * now[0]  # the idle plan fell short
