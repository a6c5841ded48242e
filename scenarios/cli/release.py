"""vfab-bench release: the 2000 table, the counts, the micro-benchmarks, a
concurrency curve with the consistency check and a million-object run,
into one directory with one page; with --against, a verdict against the
last release.  Parses the options into a ReleaseRequest and prints what
scenarios.release.make made of it; the release decides the exit status.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

import storages
from scenarios import argtypes
from scenarios.cli.args import (
    add_progress_option,
    check_storages_usable,
    progress,
    storage_columns,
    storage_list,
)
from scenarios.errors import ConfigError
from scenarios.release.plan import DEFAULT_STORAGES, MILLION_STORAGES
from scenarios.release.verdict import DEFAULT_FAIL_ABOVE

if TYPE_CHECKING:
    from scenarios.release.make import ReleaseRequest

ABOUT = (
    "Before a release: on the storages named, the 2000 table, the counts "
    "(instructions and I/O calls of the 2000 rows and the micro-benchmarks: "
    "the gate), the micro-benchmarks timed, a concurrency curve with the "
    "consistency check and a run on a million objects, each shortened to fit "
    "about five minutes on two cores (it says how), into one directory with "
    "index.html.  --against DIR (the last release's directory) puts a verdict "
    "at the top: exit 1 when a count cell grew above --fail-above or a "
    "storage is newly WRONG.  Without it: exit 1 on violations or a failed "
    "part, 3 when the check could not run."
)


def _options(p: argparse.ArgumentParser) -> None:
    """The release's own options (the storage options come after)."""
    p.add_argument(
        "--storage",
        type=storage_list,
        action="append",
        metavar="NAMES",
        help="comma-separated storages, repeatable (default: "
        f"{','.join(DEFAULT_STORAGES)}: the embedded ones and zeo)",
    )
    p.add_argument(
        "--million-storage",
        type=storage_list,
        action="append",
        metavar="NAMES",
        help="storages of the million-object run (default: "
        f"{','.join(MILLION_STORAGES)} among those named, else the "
        "first; idle 2-core machine: file about 1 minute, zeo 2.5)",
    )
    p.add_argument(
        "--out",
        type=argtypes.path,
        required=True,
        metavar="DIR",
        help="the directory for every file (created if missing; refused when "
        "it holds anything, unless --force)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="write into a --out that holds files, replacing only the "
        "release's own files there",
    )
    p.add_argument(
        "--against",
        type=argtypes.path,
        metavar="DIR",
        help="the last release's directory: a verdict against it (it is read, "
        "never run again)",
    )
    p.add_argument(
        "--fail-above",
        type=argtypes.percentage,
        default=DEFAULT_FAIL_ABOVE,
        metavar="PCT",
        help="a count cell that grew by more is a regression (default: 2%%)",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="a check of the command, not a release's figures: one trial, two "
        "micro-benchmarks, 1 s windows at 1 and 2 clients, the medium size "
        "instead of a million objects",
    )
    add_progress_option(p)


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "release",
        help="before a release: every part into one directory and page; "
        "--against the last one, a verdict",
        description=ABOUT,
    )
    _options(p)
    storages.add_storage_options(p)
    p.set_defaults(handler=main)


def request_from(args: argparse.Namespace) -> ReleaseRequest:
    """The request the options make, the storages the user named checked
    usable (servers answering, databases opening)."""
    from scenarios.release.make import ReleaseRequest

    options = storages.options_from_args(args)
    names, explicit = storage_columns(args, options, DEFAULT_STORAGES)
    if len(set(names)) != len(names):
        raise ConfigError("a storage is named twice")
    check_storages_usable(names, options, explicit=explicit)
    million = tuple(n for group in args.million_storage or () for n in group)
    if million:
        check_storages_usable(million, options, explicit=True)
    return ReleaseRequest(
        storages=names,
        out=args.out,
        options=options,
        million=million or None,
        force=args.force,
        against=args.against,
        fail_above=args.fail_above,
        quick=args.quick,
    )


def main(args: argparse.Namespace) -> int:
    # Imported here: the release's libraries load what every part needs,
    # and every command's module is imported when vfab-bench starts.
    from scenarios.release.make import make

    outcome = make(
        request_from(args),
        progress(args),
        lambda what, tick: progress(args, what, tick=tick),
    )
    print(outcome.text(), end="", flush=True)
    return outcome.exit_status
