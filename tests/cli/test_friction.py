"""What a new user met (issue 46): verify has --quick as matrix and release
do; an option no command takes is said by the subcommand it was given to,
with the options that are close and what to use instead."""

from __future__ import annotations

from pathlib import Path

import pytest

from scenarios.cli import build_parser
from scenarios.cli.verify import QUICK_BUDGET_S, QUICK_CLIENTS, config_from
from scenarios.verify.runner import DEFAULT_BUDGET_S, DEFAULT_CLIENTS
from tests.support.cli_helpers import assert_bad_input, run_cli


def test_verify_quick_is_a_preset_that_named_axes_override() -> None:
    parse = build_parser().parse_args
    quick, _ = config_from(parse(["verify", "--quick", "--storage", "zeo"]))
    assert (quick.clients, quick.budget_s) == (QUICK_CLIENTS, QUICK_BUDGET_S)
    assert quick.budget_s < DEFAULT_BUDGET_S and len(quick.clients) < 3
    named, _ = config_from(
        parse(["verify", "--quick", "--storage", "zeo", "--budget", "7"])
    )
    assert (named.clients, named.budget_s) == (QUICK_CLIENTS, 7.0)
    default, _ = config_from(parse(["verify", "--storage", "zeo"]))
    assert (default.clients, default.budget_s) == (DEFAULT_CLIENTS, DEFAULT_BUDGET_S)


def test_an_unknown_option_names_the_subcommand_and_what_to_use(
    capsys: pytest.CaptureFixture[str],
) -> None:
    r = run_cli(capsys, "verify", "--fast")
    assert_bad_input(r, "vfab-bench verify: error: unrecognized arguments: --fast")
    assert "--budget SECONDS" in r.err and "--quick" in r.err
    assert "`vfab-bench verify --help` lists its options" in r.err
    r = run_cli(capsys, "run", "--sotrage", "file")
    assert_bad_input(r, "vfab-bench run: error: unrecognized arguments: --sotrage")
    assert "did you mean --storage" in r.err


def test_the_end_load_the_run_made_itself_is_not_blamed() -> None:
    """A matrix at 20 clients leaves a 1-minute load of about 20 at its end:
    its own, not another's work (the start still warns)."""
    from scenarios.results import environment

    env = {"cpu_count": 2, "load_average_start": [0.3], "load_average_end": [15.33]}
    assert [w.split(" (")[0] for w in environment.busy_warnings(env)] == [
        "the machine was busy at the end of the run"
    ]
    own = dict(env, own_tasks=21)
    assert environment.busy_warnings(own) == []
    assert "up to 21 tasks of this run's own" in (environment.load_line(own) or "")
    busy = dict(own, load_average_end=[40.0])
    (warning,) = environment.busy_warnings(busy)
    assert "load average 40.00 on 2 CPUs, 21 of it this run's own" in warning


def test_a_matrix_says_each_warning_once(capsys: pytest.CaptureFixture[str]) -> None:
    """The busy warnings are the report's: not printed on stderr too."""
    r = run_cli(
        capsys, "matrix", "--storage", "file", "--concurrency", "2", "--objects",
        "1", "--rounds", "1", "--transactions", "1", "--benchmark", "add",
    )  # fmt: skip
    assert r.status == 0, r.err
    both = " ".join((r.out + r.err).split())
    for when in ("start", "end"):
        assert both.count(f"busy at the {when} of the run") <= 1, both
    assert "warning:" not in r.err


def test_run_says_what_it_does_first_and_counts_elapsed_from_its_start(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The first line comes before the warmups, not after them; a round's
    "elapsed" counts from the command's start (the warmups and the checks
    before them included), not from the first timed round."""
    import re

    r = run_cli(capsys, "run", "--storage", "mapping", "--size", "small",
                "--repeat", "1", "--warmups", "1")  # fmt: skip
    assert r.status == 0, r.err
    lines = r.err.splitlines()
    assert lines[0].startswith("warming up: 1 untimed round of mapping at small")
    found = re.search(r"\(round ([\d.]+) s, elapsed ([\d.]+) s\)", r.err)
    assert found, r.err
    round_s, elapsed_s = map(float, found.groups())
    assert elapsed_s > round_s  # the warmup round came before it


def test_elapsed_counts_from_the_command_start() -> None:
    import time

    from scenarios import progress

    progress.command_started(time.monotonic() - 30)
    try:
        shown = progress.Progress(lambda line: None, bar=False)
        assert shown.elapsed() >= 30
        assert 0 < progress.process_age() < 7 * 24 * 3600
    finally:
        progress.command_started()


@pytest.mark.subprocess
def test_a_long_child_pytest_says_it_is_still_at_work(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """release's micro-benchmarks (under callgrind: minutes) say every
    STILL_S how long so far and the child's last line, not nothing."""
    import sys

    from scenarios.progress import Progress
    from scenarios.release import parts

    monkeypatch.setattr(parts, "STILL_S", 0.5)
    said: list[str] = []
    child = parts.PytestChild(
        [sys.executable, "-c",
         "import time; print('collected 3 items', flush=True); time.sleep(2)"]
    )  # fmt: skip
    done = child.result(parts.still_line(Progress(said.append, bar=False), "micro"))
    assert done.returncode == 0 and done.stdout == "collected 3 items\n"
    assert said, "no line while the child ran"
    assert said[-1].startswith("release: micro, 0:0")
    assert said[-1].endswith("so far (last: collected 3 items)")


def test_estimates_know_the_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """An idle machine's estimate scales with this machine's speed probe or
    its load, whichever says slower, and the line says so."""
    from scenarios import progress

    slow = progress.Machine(probe_s=0.001, load=1.0, cpus=2)
    assert slow.factor == pytest.approx(2.0)  # the probe: twice the reference
    busy = progress.Machine(probe_s=0.0005, load=8.0, cpus=2)
    assert busy.factor == pytest.approx(4.0)  # 4 tasks a CPU
    assert progress.Machine(0.0005, 0.1, 2).factor == pytest.approx(1.0)
    assert progress.Machine(1.0, None, 2).factor == progress.FACTOR_BOUNDS[1]
    assert "4.0x the time they took on an idle machine" in busy.words()
    assert "load 8.0 on 2 CPUs" in busy.words()

    monkeypatch.setattr(progress, "machine_now", lambda: busy)
    said: list[str] = []
    shown = progress.Progress(said.append, bar=False, what="matrix")
    shown.plan(10, unit_s=3.0, idle_s=True)
    assert shown.eta() == pytest.approx(120.0)  # 10 units x 3 s x 4
    assert [" ".join(line.split()) for line in said] == [
        f"matrix: estimates at {busy.words()}"
    ]
    windows = progress.Progress(said.append, bar=False)
    windows.plan(10, unit_s=3.0)  # a load window's seconds: as they are
    assert windows.eta() == pytest.approx(30.0)


@pytest.mark.parametrize(
    "command", ["run", "sweep", "scale", "verify", "census", "matrix"]
)
@pytest.mark.parametrize("named_by", ["--storage-uri", "--storage-config"])
def test_a_refused_command_leaves_the_users_database_as_it_was(
    command: str,
    named_by: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Every command that takes a database a user names, refused for an
    output it cannot write: no lock, index or .tmp beside the data."""
    import transaction
    import ZODB
    import ZODB.FileStorage

    data = tmp_path / "data"
    data.mkdir()
    db = ZODB.DB(ZODB.FileStorage.FileStorage(str(data / "Data.fs")))
    conn = db.open()
    conn.root()["theirs"] = 1
    transaction.commit()
    db.close()
    for extra in data.iterdir():
        if extra.name != "Data.fs":
            extra.unlink()
    conf = data / "z.conf"
    conf.write_text(
        f"<zodb>\n<filestorage>\npath {data / 'Data.fs'}\n</filestorage>\n</zodb>\n"
    )
    before = {p.name: p.read_bytes() for p in data.iterdir()}
    if named_by == "--storage-uri":
        source = [f"file://{data / 'Data.fs'}"]
        if command != "census":
            source.insert(0, named_by)
    else:
        source = [named_by, str(conf)]
    r = run_cli(capsys, command, *source, "--json", str(tmp_path / "no" / "x.json"))
    assert_bad_input(r, "does not exist")
    assert {p.name: p.read_bytes() for p in data.iterdir()} == before
