"""vfab-bench release: the 2000 table, the counts, the micro-benchmarks, a
concurrency curve with the consistency check and a million-object run,
into one directory with one page; with --against, a verdict against the
last release (scenarios.release)."""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import storages
from scenarios import argtypes
from scenarios.cli.args import (
    add_progress_option,
    check_storages_usable,
    progress,
    storage_columns,
    storage_list,
)
from scenarios.errors import (
    EXIT_ERRORS,
    EXIT_FAILED,
    EXIT_INVARIANTS,
    EXIT_OK,
    EXIT_VIOLATIONS,
    ConfigError,
)
from scenarios.outputs import check_output, write_json, write_text
from scenarios.release import plan as release_plan
from scenarios.release.parts import PartResult
from scenarios.release.verdict import DEFAULT_FAIL_ABOVE
from scenarios.results.table import wrapped

#: Every file a release writes into --out (checked before any work).
FILES = (
    "index.html",
    "release.json",
    "table.json",
    "table.html",
    "table.txt",
    "counts.json",
    "counts.txt",
    "counts-micro.json",
    "counts-micro.txt",
    "micro.json",
    "micro.txt",
    "scale.json",
    "scale.txt",
    "scale.svg",
    "million.json",
    "million.html",
    "million.txt",
)

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
        f"{','.join(release_plan.DEFAULT_STORAGES)}: the embedded ones and zeo)",
    )
    p.add_argument(
        "--million-storage",
        type=storage_list,
        action="append",
        metavar="NAMES",
        help="storages of the million-object run (default: "
        f"{','.join(release_plan.MILLION_STORAGES)} among those named, else the "
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


def new_identity(plan: release_plan.ReleasePlan) -> dict[str, Any]:
    """What this release will be, in model.identity()'s terms."""
    return {
        "storages": sorted(plan.storages),
        "quick": plan.quick,
        "scale": plan.table.scale,
        "seed": plan.table.seed,
        "million": None if plan.million is None else plan.million.scale,
    }


def _plan(args: argparse.Namespace) -> release_plan.ReleasePlan:
    """The plan, every input checked (storages, --against, --out) before any
    work."""
    import dataclasses

    from scenarios.clients.memory import check_memory

    options = storages.options_from_args(args)
    names, explicit = storage_columns(args, options, release_plan.DEFAULT_STORAGES)
    if len(set(names)) != len(names):
        raise ConfigError("a storage is named twice")
    check_storages_usable(names, options, explicit=explicit)
    # Default storages that cannot run here are left out (run does the same).
    names = tuple(n for n in names if storages.get(n, options).unavailable() is None)
    if not names:
        raise ConfigError("none of the storages can run here")
    million = million_storages(args, names)
    check_storages_usable(million, options, explicit=True)
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
    return plan


def _counted(
    plan: release_plan.ReleasePlan,
) -> tuple[release_plan.ReleasePlan, str | None]:
    """*plan* without its counts part where valgrind, vgdb or strace is
    missing (the part says why; the verdict says there is no gate), and
    why it cannot count (None when it can)."""
    import dataclasses

    from scenarios.counts import runner

    try:
        runner.check_tools()
    except ConfigError as e:
        skipped = {**plan.skipped, "counts": str(e)}
        return dataclasses.replace(plan, counts=None, skipped=skipped), str(e)
    return plan, None


def say_cannot_count(why: str, against: Path | None) -> None:
    """The one line a release that cannot count says first, before any
    progress: why (with what to install) and what it means for the gate."""
    then = (
        f"; the verdict against {against} will be NOT FULLY CHECKED"
        if against is not None
        else "; this release will hold no counts to gate a later one on"
    )
    print(f"vfab-bench release: cannot count: {why}{then}", file=sys.stderr, flush=True)


def _ancestors(path: Path) -> list[Path]:
    """*path* and the directories above it that exist."""
    path = Path(os.path.abspath(path))
    return [p for p in (path, *path.parents) if p.exists()]


def _same(a: Path, b: Path) -> bool:
    """One file or directory, whatever the names (a bind mount, a link):
    the same device and inode."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def check_apart(against: Path, out: Path) -> None:
    """ConfigError when writing *out* would write into release *against*,
    or replace it: the same directory by any name (devices and inodes
    compared, so a bind mount or a link is seen through), or one inside
    the other."""
    if not against.exists():
        return  # model.load says what is wrong with it
    if any(_same(p, against) for p in _ancestors(out)):
        raise ConfigError(
            f"--out {out} is --against {against} or inside it: a release never "
            "writes into the one it is compared with; name another directory"
        )
    if out.exists() and any(_same(p, out) for p in _ancestors(against)):
        raise ConfigError(
            f"--against {against} is inside --out {out}: --force would replace "
            "it; name another directory"
        )


def main(args: argparse.Namespace) -> int:
    from scenarios.release import model, parts, runner, verdict

    # Absolute: the micro part's pytest runs in the project's directory.
    args.out = Path(os.path.abspath(args.out))
    plan = _plan(args)
    old = None
    if args.against is not None:
        check_apart(Path(args.against), args.out)
        old = model.load(args.against)
        model.check_comparable(
            model.identity(old), new_identity(plan), str(args.against)
        )
    check_out(args.out, args.force)
    plan, cannot_count = _counted(plan)
    if cannot_count is not None:
        say_cannot_count(cannot_count, args.against)
    shortened = plan.shortened()
    say = progress(args)
    for line in shortened:
        say(f"release: {line}")

    from scenarios.results import environment
    from scenarios.results.metadata import code, collect

    start, probes = environment.snapshot(), environment.probes()
    out, force = args.out, args.force
    out.mkdir(exist_ok=True)
    results = runner.run(
        plan, out, force, say, lambda what, tick: progress(args, what, tick=tick)
    )
    scale = next(p for p in results if p.name == "scale")
    status = exit_status(results)
    meta = collect(plan.table)
    del meta["config"]  # each part's file has its own
    metadata = {
        **meta,
        "code": code(),
        "cpu_count": os.cpu_count(),
        "storages": list(plan.storages),
        "quick": args.quick,
        "fail_above": args.fail_above,
        "environment": environment.record(start, probes + environment.probes()),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec="seconds"
        ),
    }
    from scenarios.results.files import RELEASE

    summary: dict[str, Any] = {
        **RELEASE.header(),
        "metadata": metadata,
        "shortened": shortened,
        "parts": [p.to_json() for p in results],
        "verdicts": parts.verdicts(scale),
        "against": None,
        "exit_status": status,
    }
    new = model.load(out, summary)
    judged = None
    if old is not None:
        judged = verdict.compare(old, new, args.fail_above)
        # Against the last release the gate decides: a storage WRONG as it
        # was, or by a known upstream bug, is a line of the verdict, not a
        # failure of this release (a part that failed or went unchecked is).
        unjudged = [p for p in results if p.status != "violations"]
        status = worst(exit_status(unjudged), judged.exit_status)
        summary["against"] = {
            "directory": str(args.against),
            "verdict": judged.to_json(),
        }
        summary["exit_status"] = status
    write_json(out / "release.json", summary, force)
    from scenarios.release import page

    write_text(out / "index.html", page.page(new, judged), force)
    print(text(results, judged, parts.verdicts(scale), out), end="")
    sys.stdout.flush()
    return status


def text(
    results: list[PartResult],
    judged: Any,
    own: list[str],
    out: Path,
) -> str:
    """What release prints: the verdict first, a line per part, where the
    rest is."""
    lines = []
    if judged is not None:
        lines.append(judged.text().rstrip("\n"))
    else:
        lines.append("Verdict: no last release named (--against DIR compares with one)")
        lines += [wrapped(f"  {line}") for line in own]
    lines.append("")
    for part in results:
        detail = f": {part.detail}" if part.detail else ""
        files = f" ({', '.join(part.files)})" if part.files else ""
        lines.append(wrapped(f"{part.title}: {part.status}{detail}{files}"))
    lines.append("")
    if judged is not None and judged.details():
        lines.append(
            wrapped(f"Every compared cell: vfab-bench compare {judged.old.path} {out}")
        )
    lines.append(f"release: {out / 'index.html'}")
    return "\n".join(lines) + "\n"


def worst(*statuses: int) -> int:
    """The status that wins: a failure or regression (1), then a check not
    finished (3), then errors (4), then 0 (scenarios.errors)."""
    for status in (EXIT_VIOLATIONS, EXIT_INVARIANTS, EXIT_ERRORS):
        if status in statuses:
            return status
    return max(statuses, default=EXIT_OK)


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
