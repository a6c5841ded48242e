"""vfab-bench release: the 2000 table, the micro-benchmarks, a concurrency
curve with the consistency check and a million-object run, into one
directory with one HTML page (scenarios.release)."""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import os
import sys
import tempfile
import textwrap
from pathlib import Path

import storages
from scenarios import argtypes
from scenarios.cli.args import (
    add_progress_option,
    check_storages_usable,
    progress,
    selected_storages,
    storage_list,
)
from scenarios.cli.outputs import check_output, write_json, write_text
from scenarios.errors import (
    EXIT_FAILED,
    EXIT_INVARIANTS,
    EXIT_OK,
    EXIT_VIOLATIONS,
    ConfigError,
)
from scenarios.release import plan as release_plan
from scenarios.release.parts import PartResult
from storages import StorageOptions

#: Every file a release writes into --out (checked before any work).
FILES = (
    "index.html",
    "release.json",
    "table.json",
    "table.html",
    "table.txt",
    "micro.json",
    "micro.txt",
    "scale.json",
    "scale.txt",
    "scale.svg",
    "million.json",
    "million.html",
    "million.txt",
)

ABOUT = "\n\n".join(
    textwrap.fill(paragraph, 79)
    for paragraph in (
        "Before a release: on the storages named, the 2000 table (run), the "
        "micro-benchmarks (pytest-benchmark's suite in tests/benchmarks), a "
        "concurrency curve with the consistency check (scale, on the storages "
        "processes can share) and a run on a million objects, each shortened "
        "to fit about five minutes on two cores (it says how), into one "
        "directory: every part's JSON and text, and index.html presenting "
        "them all.",
        "Exit status 1 when the consistency check finds violations or a part "
        "fails, 3 when the check could not run; a failed part does not stop "
        "the others.",
    )
)


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "release",
        help="the 2000 table, micro-benchmarks, a concurrency curve and a "
        "million-object run into one directory and page",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=ABOUT,
    )
    p.add_argument(
        "--storage",
        type=storage_list,
        action="append",
        metavar="NAMES",
        help="comma-separated storages, repeatable (default: "
        f"{','.join(release_plan.DEFAULT_STORAGES)}: the embedded ones and zeo)",
    )
    p.add_argument(
        "--million-storage",
        type=storage_list,
        action="append",
        metavar="NAMES",
        help="storages of the million-object run (default: "
        f"{','.join(release_plan.MILLION_STORAGES)} among the storages named, "
        "else the first named; on an idle 2-core machine: file about 1 "
        "minute, zeo 2.5)",
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
        help="write into a --out that holds files, replacing the release's "
        "own files there; nothing else in it is touched",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="a check of the command, not a release's figures: one trial, "
        "two micro-benchmarks, 1 s windows at 1 and 2 clients, and the "
        "medium size instead of a million objects",
    )
    add_progress_option(p)
    p.set_defaults(handler=main)


def check_out(out: Path, force: bool) -> None:
    """Refuse, before any work, an --out that is not a directory, holds
    files (without --force), cannot be created or written, or holds a
    database or anything else under one of the release's file names."""
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} is not a directory")
    if out.is_dir():
        if any(out.iterdir()) and not force:
            raise ConfigError(
                f"--out {out} is not empty; name a new directory, or use --force "
                "to replace the release's files in it"
            )
        for name in FILES:
            check_output(out / name, force, flag="--out")
        return
    parent = out.parent if str(out.parent) else Path(".")
    if not parent.is_dir():
        raise ConfigError(f"directory {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise ConfigError(f"directory {parent} is not writable")


def million_storages(
    args: argparse.Namespace, names: tuple[str, ...]
) -> tuple[str, ...]:
    """--million-storage, or the defaults among *names*, or the first name."""
    given = [n for group in args.million_storage or () for n in group]
    if given:
        if len(set(given)) != len(given):
            raise ConfigError("--million-storage names a storage twice")
        return tuple(given)
    chosen = tuple(n for n in release_plan.MILLION_STORAGES if n in names)
    return chosen or names[:1]


def main(args: argparse.Namespace) -> int:
    from scenarios.release import page, parts
    from scenarios.results.metadata import versions
    from scenarios.scale.config import check_memory

    options = StorageOptions()
    named = selected_storages(args)
    names = tuple(named or release_plan.DEFAULT_STORAGES)
    if len(set(names)) != len(names):
        raise ConfigError("a storage is named twice")
    check_storages_usable(names, options, explicit=bool(named))
    # Default storages that cannot run here are left out (run does the same).
    names = tuple(n for n in names if storages.get(n, options).unavailable() is None)
    if not names:
        raise ConfigError("none of the storages can run here")
    million = million_storages(args, names)
    check_storages_usable(million, options, explicit=True)
    check_out(args.out, args.force)
    plan = release_plan.plan(names, args.quick, options, Path(tempfile.gettempdir()))
    if plan.million is not None:
        plan = dataclasses.replace(
            plan, million=dataclasses.replace(plan.million, storages=million)
        )
    if plan.scale is not None:
        try:
            check_memory(max(plan.scale.clients))
        except ConfigError as e:
            plan = dataclasses.replace(
                plan, scale=None, skipped={**plan.skipped, "scale": str(e)}
            )
    shortened = plan.shortened()
    say = progress(args)
    for line in shortened:
        say(f"release: {line}")

    out, force = args.out, args.force
    out.mkdir(exist_ok=True)
    results: list[PartResult] = []
    with progress(args, "release: 2000 table", tick=False) as shown:
        results.append(
            parts.run_table("table", "The 2000 table", plan.table, out, force, shown)
        )
    with progress(args, "release: micro-benchmarks") as shown:
        results.append(parts.run_micro(plan.micro, out, force, shown))
    scale = PartResult("scale", "Concurrency curve and consistency check (scale)")
    if plan.scale is not None:
        with progress(args, "release: concurrency") as shown:
            scale = parts.run_scale(plan.scale, options, out, force, shown)
    else:
        scale.status, scale.detail = "not run", plan.skipped["scale"]
    results.append(scale)
    title = "A million objects (run)"
    if plan.million is not None:
        with progress(args, "release: million", tick=True) as shown:
            results.append(
                parts.run_table("million", title, plan.million, out, force, shown)
            )
    else:
        results.append(
            PartResult("million", title, "not run", detail=plan.skipped["million"])
        )

    status = exit_status(results)
    metadata = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec="seconds"
        ),
        "versions": versions(),
        "cpu_count": os.cpu_count(),
        "storages": list(names),
        "quick": args.quick,
    }
    summary = {
        "kind": "release",
        "metadata": metadata,
        "shortened": shortened,
        "parts": [p.to_json() for p in results],
        "verdicts": parts.verdicts(scale),
        "exit_status": status,
    }
    write_json(out / "release.json", summary, force)
    write_text(out / "index.html", page.page(results, shortened, metadata, out), force)
    for part in results:
        detail = f": {part.detail}" if part.detail else ""
        print(f"== {part.title}: {part.status}{detail}")
        if part.text:
            print(part.text.rstrip("\n"))
        print()
    for line in parts.verdicts(scale):
        print(line)
    print(f"release: {out / 'index.html'}")
    sys.stdout.flush()
    return status


def exit_status(results: list[PartResult]) -> int:
    """1 for violations or a failed part, 3 when the check could not run."""
    statuses = {p.status for p in results}
    if "violations" in statuses:
        return EXIT_VIOLATIONS
    if "failed" in statuses:
        return EXIT_FAILED
    if "not checked" in statuses:
        return EXIT_INVARIANTS
    return EXIT_OK
