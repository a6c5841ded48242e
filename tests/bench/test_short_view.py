"""Output a person reads: a default run prints at most 60 lines (the 2000
table, what else was measured, where the rest is), tables whose cells are
all equal are left out with one line, times in the unit that suits them,
and --help on one screen, the storage options listed once.

Views are tested on a checked-in run (tests/data/run-default.json: a
default run of the six default storages, `run --repeat 3`), as pyperf
tests its views on tests/telco.json."""

from __future__ import annotations

import argparse
import dataclasses
import re
from pathlib import Path

import pytest

from scenarios.bench import report, short
from scenarios.cli import build_parser
from scenarios.results import formatter
from scenarios.results.model import RunResult
from tests.support.cli_helpers import run_cli

DEFAULT_RUN = Path(__file__).resolve().parents[1] / "data" / "run-default.json"


def subparser(name: str) -> argparse.ArgumentParser:
    for action in build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices[name]
    raise AssertionError("no subcommands")


def test_a_default_run_is_at_most_sixty_lines(
    capsys: pytest.CaptureFixture[str],
) -> None:
    r = run_cli(capsys, "report", str(DEFAULT_RUN))
    assert r.status == 0, r.err
    lines = r.out.splitlines()
    assert len(lines) <= short.SHORT_LINES, len(lines)
    assert lines[0] == "wall time of the 2000 rows, size small, minimum of 3 trials"
    run = RunResult.load(DEFAULT_RUN)
    assert len(run.storages) == 6 and len(run.phases) == 23
    text = r.out
    for row in ("create users/groups", "commit sequences", "query sequences"):
        assert re.search(rf"^{re.escape(row)}  ", text, re.M), row
    assert "query processes (cold)" not in text  # in --all, not here
    assert "Also measured: the wall time of 15 more rows" in text
    assert f"vfab-bench report {DEFAULT_RUN} --all" in text
    # The machine, in the short view too.
    flat = " ".join(text.split())
    assert "oad average (1 min)" in flat and "Speed probe" in flat
    everything = run_cli(capsys, "report", str(DEFAULT_RUN), "--all")
    assert "query processes (cold)" in everything.out
    assert len(everything.out.splitlines()) > 150


def test_run_prints_the_short_view(capsys: pytest.CaptureFixture[str]) -> None:
    r = run_cli(capsys, "run", "--storage", "memory,mapping", "--preset", "quick", "-q")
    assert r.status == 0, r.err
    assert len(r.out.splitlines()) <= short.SHORT_LINES
    assert r.out.startswith("wall time of the 2000 rows, size small")
    assert "run with --all" in r.out and "trial(s)" not in r.out


def test_tables_whose_cells_are_all_equal_are_left_out() -> None:
    run = RunResult.load(DEFAULT_RUN)
    rss = 61_000_000
    same = dataclasses.replace(
        run,
        results=tuple(
            dataclasses.replace(
                r,
                samples=tuple(
                    dataclasses.replace(s, rss_peak_bytes=rss) for s in r.samples
                ),
            )
            for r in run.results
        ),
    )
    titles = [t.title for t in report.tables(same)]
    assert not any(t.startswith("peak RSS") for t in titles)
    left_out = report.omitted(same)
    assert any(
        x.startswith("peak RSS of the client process") and "58.2 MB in every cell" in x
        for x in left_out
    ), left_out
    assert "Not shown (every cell equal or empty)" in " ".join(
        report.text(same).split()
    )
    assert "58.2 MB in every cell" in " ".join(short.text(same).split())
    # The run as measured: its RSS differed between storages, and is shown.
    assert any(
        t.startswith("peak RSS") for t in map(lambda t: t.title, report.tables(run))
    )


def test_times_in_the_unit_that_suits_them() -> None:
    assert formatter.duration(4.75e-6) == "4.75 µs"
    assert formatter.duration(0.0123) == "12.3 ms"
    assert formatter.duration(1.21) == "1.21 s"
    assert formatter.plural(1, "trial") == "1 trial"
    assert formatter.plural(5, "client") == "5 clients"
    run = RunResult.load(DEFAULT_RUN)
    text = report.text(run)
    assert "0.0000" not in text and "e-0" not in text
    assert re.search(r"\d µs ~", text) and re.search(r"\d ms ±", text)
    markdown = report.markdown(run)
    assert "µs" in markdown and "0.0000" not in markdown


def test_run_help_fits_a_screen(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    text = subparser("run").format_help()
    assert len(text.splitlines()) <= 60, len(text.splitlines())
    assert "examples:" in text and text.count("  vfab-bench run") >= 2
    # The storage options: listed once, elsewhere.
    assert "--zeo-port" not in text and "vfab-bench help storages" in text
    for name in ("release", "report", "compare", "history"):
        help_text = subparser(name).format_help()
        assert len(help_text.splitlines()) <= 60, name
        assert "examples:" in help_text, name
    assert "(s)" not in text and "trials rounds" not in text


def test_help_storages_lists_them_once(capsys: pytest.CaptureFixture[str]) -> None:
    r = run_cli(capsys, "help", "storages")
    assert r.status == 0, r.err
    for option in ("--storage-config", "--storage-uri", "--zeo-port", "--pg-dsn"):
        assert r.out.count(option) >= 1, option
    r = run_cli(capsys, "help", "phases")
    assert r.status == 0 and "commit processes" in r.out
    r = run_cli(capsys, "help", "nonesuch")
    assert r.status == 2 and "no help topic 'nonesuch'" in r.err
    # Hidden from --help, still parsed.
    args = build_parser().parse_args(["run", "--zeo-port", "8100"])
    assert args.zeo_port == 8100


def test_also_measured_is_a_sentence_and_a_busy_machine_one_warning() -> None:
    """The paragraph lists the other tables as phrases ("; and" before the
    last one), none a bare title such as "after the run"; a machine busy at
    the start and at the end is one warning, with the load average in it."""
    run = RunResult.load(DEFAULT_RUN)
    env = dict(run.metadata.get("environment") or {})
    env.update(
        cpu_count=2,
        load_average_start=[3.1, 2.0, 1.0],
        load_average_end=[2.9, 2.0, 1.0],
    )
    env["warnings"] = ["busy at the start", "busy at the end"]
    busy = dataclasses.replace(run, metadata={**run.metadata, "environment": env})
    text = short.text(busy)
    flat = " ".join(text.split())
    also = flat[flat.index("Also measured:") :].split(". ")[0]
    assert "; after the run" not in also and ": Python's cyclic GC;" not in also
    assert "; and each storage after the run (its trials, size on disk" in also
    assert flat.count("Warning") == 1 and flat.count("busy") == 1
    warning = "Warning: the machine was busy: load average (1 min) 3.10 at the start"
    assert warning in flat
    assert "Load average (1 min)" not in flat  # said once, in the warning
