"""Every command's --help states what an option left out means: its
default (scenarios.cli.args.show_defaults) and, for numbers, its range."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from scenarios.cli import build_parser
from scenarios.cli.args import default_text

ROOT = Path(__file__).resolve().parents[2]


def subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("no subcommands")


def test_every_option_with_a_default_says_it() -> None:
    missing = []
    for name, sub in subcommands().items():
        for action in sub._actions:
            if default_text(action) is None or action.help == argparse.SUPPRESS:
                continue
            if "default" not in (action.help or ""):
                missing.append(f"{name} {'/'.join(action.option_strings)}")
    assert not missing


def printed(*args: str) -> str:
    """What `vfab-bench ARGS` prints on a wide terminal, on one line."""
    proc = subprocess.run(
        [sys.executable, "-m", "scenarios.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "COLUMNS": "500", "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr
    return " ".join(proc.stdout.split())


@pytest.mark.subprocess
def test_help_shows_the_default_as_users_see_it() -> None:
    """In the printed --help, a default the option's own text did not state
    comes before the range, and a float shows as a number, not 10.0."""
    text = printed("scale", "--help")
    assert "measured seconds of each point (default: 10) (range: above 0" in text
    assert "--no-check record no history" in text
    assert "(default: True)" not in text  # a flag has no default to state
    # The weights are listed once, in `vfab-bench help mix`.
    assert "--weight-browse" not in text and "vfab-bench help mix" in text
    text = printed("help", "mix")
    assert "--weight-browse W weight of browse" in text
    assert "(default: 3) (range: 0 to 1,000,000)" in text


#: Every command's --help fits a screen: at most this many lines, none
#: wider than HELP_COLUMNS (what is longer goes to `vfab-bench help TOPIC`
#: or the docs).
HELP_LINES = 60
HELP_COLUMNS = 80


@pytest.mark.parametrize("columns", ["80", "500"])
def test_every_commands_help_fits_a_screen(
    columns: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every registered command, so a new one is held to it too, and the
    top level; on a terminal 80 columns wide and on a far wider one
    (argparse fills to the terminal's width unless told otherwise)."""
    monkeypatch.setenv("COLUMNS", columns)
    too_long = {}
    too_wide = {}
    commands = subcommands()
    assert {"run", "verify", "scale", "serve", "zeoloop", "census"} <= set(commands)
    # and the top level's own (vfab-bench --help)
    for name, sub in [("vfab-bench", build_parser()), *commands.items()]:
        lines = sub.format_help().splitlines()
        if len(lines) > HELP_LINES:
            too_long[name] = len(lines)
        wide = [line for line in lines if len(line) > HELP_COLUMNS]
        if wide:
            too_wide[name] = wide
    assert not too_long, too_long
    assert not too_wide, too_wide


@pytest.mark.parametrize("topic", ["storages", "mix", "phases"])
def test_every_help_topic_keeps_within_80_columns(
    topic: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scenarios.cli import helptext

    monkeypatch.setenv("COLUMNS", "500")
    text = (
        helptext.phases_text()
        if topic == "phases"
        else helptext.topic_parser(topic).format_help()
    )
    assert text.strip()
    assert [line for line in text.splitlines() if len(line) > HELP_COLUMNS] == []
