"""Every numeric option has a range, printed in --help and checked as the
option is parsed (issue 21, item 4): the walk below finds every option of
every subcommand whose value is a number and tries it out of range and not
finite (inf, -inf, nan, 1e400, 10**400): one line, exit 2, no traceback."""

from __future__ import annotations

import argparse
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scenarios.argtypes import bounds_text
from scenarios.cli import build_parser
from tests.cli.test_failure_paths import assert_one_line, vfab_bench
from tests.support.cli_helpers import run_cli


def subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def numeric(action: argparse.Action) -> bool:
    """An option whose value is a number (or a list of numbers)."""
    if action.type is None or not action.option_strings:
        return False
    for probe in ("1", "0", "2000", str(2**20)):  # a port, a byte size...
        try:
            value = action.type(probe)
            break
        except (argparse.ArgumentTypeError, ValueError, TypeError):
            continue
    else:
        return False
    if isinstance(value, (list, tuple)) and value:
        value = value[0]
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def numeric_options() -> Iterator[tuple[str, argparse.Action]]:
    for name, parser in subcommands().items():
        for action in parser._actions:
            if numeric(action):
                yield name, action


def bad_values(action: argparse.Action) -> list[str]:
    low, high = action.type.bounds  # type: ignore[union-attr]
    out = ["inf", "-inf", "nan", "1e400", str(10**400), "-" + str(10**400)]
    if isinstance(high, int) and not isinstance(high, bool):
        out += [str(high + 1), str(low - 1)]
    else:
        out += [repr(high * 2 + 1), repr(low - 1)]
    if getattr(action.type, "each", False):
        out = [f"1,{v}" for v in out]
    return out


ALL = list(numeric_options())


def test_the_walk_finds_the_options_of_the_issue() -> None:
    found = {(name, action.option_strings[-1]) for name, action in ALL}
    for wanted in [
        ("run", "--bdb-cache-size"),
        ("run", "--repeat"),
        ("run", "--cache-size"),
        ("sweep", "--objects"),
        ("scale", "--rate"),
        ("scale", "--duration"),
        ("scale", "--clients"),
        ("zeoloop", "--users"),
        ("zeoloop", "--seed"),
        ("serve", "--port"),
        ("compare", "--fail-above"),
        ("run", "--zeo-port"),
    ]:
        assert wanted in found, wanted
    assert len(ALL) > 60


@pytest.mark.parametrize(
    ("command", "action"),
    [pytest.param(n, a, id=f"{n} {a.option_strings[-1]}") for n, a in ALL],
)
def test_every_numeric_option_has_a_range_in_help(
    command: str, action: argparse.Action
) -> None:
    text = bounds_text(action.type)
    assert text is not None, "no range"
    if action.help == argparse.SUPPRESS:
        # Listed once, with its range, by `vfab-bench help storages`, `mix`
        # or `clients`.
        action = shown_in_help_topic(action.option_strings[-1])
    assert action.help and text in action.help


def shown_in_help_topic(option: str) -> argparse.Action:
    from scenarios.cli import helptext

    for topic in ("storages", "mix", "clients"):
        for action in helptext.topic_parser(topic)._actions:
            if option in action.option_strings:
                return action
    raise AssertionError(f"{option} is hidden from --help and in no help topic")


@pytest.mark.parametrize(
    ("command", "action"),
    [pytest.param(n, a, id=f"{n} {a.option_strings[-1]}") for n, a in ALL],
)
def test_out_of_range_and_non_finite_values_are_one_line(
    command: str, action: argparse.Action, capsys: pytest.CaptureFixture[str]
) -> None:
    flag = action.option_strings[-1]
    low, high = action.type.bounds  # type: ignore[union-attr]
    assert math.isfinite(low) and math.isfinite(high)
    for value in bad_values(action):
        outcome = run_cli(capsys, command, f"{flag}={value}")
        assert outcome.status == 2, (value, outcome)
        lines = outcome.err.strip().splitlines()
        assert len(lines) == 1, (value, outcome.err)
        assert flag in lines[0] and "Traceback" not in outcome.err, lines[0]
        assert len(lines[0]) < 300, lines[0]


def test_the_bounds_themselves_parse() -> None:
    for command, action in ALL:
        low, high = action.type.bounds  # type: ignore[union-attr]
        edge: list[Any] = (
            [high] if getattr(action.type, "above", False) else [low, high]
        )
        for value in edge:
            text = str(int(value)) if float(value).is_integer() else repr(value)
            if getattr(action.type, "each", False) and command == "scale":
                continue  # --clients: ScaleConfig's memory check decides
            assert action.type(text) is not None, (command, action.option_strings)


@pytest.mark.subprocess
@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["sweep", "--objects", str(10**12)], "at most 10,000,000"),
        (["sweep", "--objects", "1e12"], "at most 10,000,000"),
        (["scale", "--rate", "inf"], "not a finite number"),
        (["scale", "--duration", "1e308"], "at most 604,800"),
        (["run", "--repeat", str(10**400)], "must be from 1 to 10,000"),
        (["run", "--bdb-cache-size", str(2**64)], "--bdb-cache-size"),
        (["scale", "--fault", "kill-client:1e400"], "times must be from 0"),
        (["zeoloop", "--duration", "nan"], "not a finite number"),
    ],
)
def test_the_issues_examples_leave_nothing_behind(
    args: list[str], fragment: str, tmp_path: Path
) -> None:
    proc = vfab_bench(*args, cwd=tmp_path, timeout=60, TMPDIR=str(tmp_path))
    assert_one_line(proc, fragment)
    assert list(tmp_path.iterdir()) == []
