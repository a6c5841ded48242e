"""Value types for command-line options (the CLI's parser and locust's): each
raises argparse.ArgumentTypeError naming what is wrong, and every numeric
type has a range (`bounds`) that --help prints and parsing enforces.
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from storages.options import MAX_INT, at_least, positive_int, show_number, shown

non_negative_int = at_least(0)

#: The longest a command may be asked to run or wait, in seconds (a week):
#: beyond it a typo (1e308) would run for ever.
MAX_SECONDS = 7 * 24 * 3600.0

#: Seeds: any signed 64-bit integer.
seed = at_least(-MAX_INT - 1, MAX_INT)


def path(text: str) -> Path:
    """A file or directory name; an empty one (which would mean the current
    directory) is refused, and one longer than the file system allows."""
    if not text.strip():
        raise argparse.ArgumentTypeError("needs a path, not an empty one")
    problem = too_long(text)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return Path(text)


#: The longest name of one file and the longest path Linux file systems
#: take (NAME_MAX and PATH_MAX, which counts the final NUL): longer ones
#: fail with ENAMETOOLONG, "File name too long", whatever the command.
NAME_MAX, PATH_MAX = 255, 4096


def too_long(name: str | bytes) -> str | None:
    """Why the file system refuses *name* for its length (a name in it, or
    the whole path, longer than it allows), or None."""
    raw = os.fsencode(name)
    longest = max(raw.split(b"/"), key=len)
    if len(longest) > NAME_MAX:
        return (
            f"{abridged(raw)}: a name in it is {len(longest):,} bytes long, more "
            f"than a file system allows ({NAME_MAX}); use a shorter name"
        )
    if len(raw) >= PATH_MAX:
        return (
            f"{abridged(raw)}: the path is {len(raw):,} bytes long, more than the "
            f"system allows ({PATH_MAX - 1}); use a shorter path"
        )
    return None


def abridged(raw: bytes, keep: int = 60) -> str:
    """A long path shown by its start and its end."""
    text = os.fsdecode(raw)
    if len(text) <= keep:
        return text
    return f"{text[: keep // 2]}...{text[-(keep // 2) :]}"


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {shown(text)}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"not a finite number: {shown(text)}")
    return value


def between(low: float, high: float, above: bool = False) -> Callable[[str], float]:
    """An argparse type: a finite number from *low* (or, with *above*,
    greater than *low*) to *high*."""
    span = (
        f"above {show_number(low)} and at most {show_number(high)}"
        if above
        else f"from {show_number(low)} to {show_number(high)}"
    )

    def parse(text: str) -> float:
        value = _number(text)
        if not ((value > low if above else value >= low) and value <= high):
            raise argparse.ArgumentTypeError(f"must be {span}, not {shown(text)}")
        return value

    parse.bounds = (low, high)  # type: ignore[attr-defined]
    parse.above = above  # type: ignore[attr-defined]
    return parse


#: Seconds a command runs or waits: above 0, at most MAX_SECONDS.
positive_float = between(0, MAX_SECONDS, above=True)
#: Seconds or another quantity that may be 0, at most MAX_SECONDS.
non_negative_float = between(0, MAX_SECONDS)


#: The largest percentage (--fail-above: a ten-thousandfold slowdown).
MAX_PERCENT = 1_000_000


def percentage(text: str) -> float:
    """An argparse type: "10%" or "10" -> 0.10."""
    number = text.strip().removesuffix("%")
    try:
        value = float(number) / 100
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a percentage: {shown(text)}") from None
    if not 0 <= value <= MAX_PERCENT / 100:
        raise argparse.ArgumentTypeError(
            f"must be from 0% to {MAX_PERCENT:,}%, not {shown(text)}"
        )
    return value


percentage.bounds = (0, MAX_PERCENT)  # type: ignore[attr-defined]


def bounds_text(kind: Any) -> str | None:
    """The range --help prints for an option of type *kind*, or None."""
    bounds = getattr(kind, "bounds", None)
    if bounds is None:
        return None
    low, high = bounds
    each = " of each" if getattr(kind, "each", False) else ""
    if getattr(kind, "above", False):
        return f"range{each}: above {show_number(low)}, at most {show_number(high)}"
    return f"range{each}: {show_number(low)} to {show_number(high)}"


def ranged(kind: Callable[[str], Any], low: float, high: float) -> Callable[[str], Any]:
    """Mark a list type (N,N,...) whose every item lies in [low, high]."""
    kind.bounds = (low, high)  # type: ignore[attr-defined]
    kind.each = True  # type: ignore[attr-defined]
    return kind


__all__ = [
    "MAX_SECONDS",
    "at_least",
    "between",
    "bounds_text",
    "ranged",
    "seed",
    "non_negative_float",
    "non_negative_int",
    "path",
    "percentage",
    "positive_float",
    "positive_int",
]
