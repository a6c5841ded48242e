"""Value types for command-line options, shared by the CLI's parser and
locust's: each raises argparse.ArgumentTypeError naming what is wrong.

The whole-number types come from storages.options, which the storages'
own option groups use too."""

from __future__ import annotations

import argparse
from pathlib import Path

from storages.options import at_least, positive_int

non_negative_int = at_least(0)


def path(text: str) -> Path:
    """A file or directory name; an empty one (which would mean the current
    directory) is refused."""
    if not text.strip():
        raise argparse.ArgumentTypeError("needs a path, not an empty one")
    return Path(text)


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None


def positive_float(text: str) -> float:
    value = _number(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be above 0, not {text}")
    return value


def non_negative_float(text: str) -> float:
    value = _number(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {text}")
    return value


__all__ = [
    "at_least",
    "non_negative_float",
    "non_negative_int",
    "path",
    "positive_float",
    "positive_int",
]
