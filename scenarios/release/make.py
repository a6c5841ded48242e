"""Making a release: the request (ReleaseRequest) checked before any work,
the parts run (runner.py), release.json as a value (ReleaseFile), the
verdict against the last release, and the exit status, which the release
decides, not the command line (scenarios.cli.release parses and prints).
"""

from __future__ import annotations

import dataclasses
import datetime
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import storages
from scenarios.clients.memory import check_memory
from scenarios.counts.runner import check_tools
from scenarios.errors import (
    EXIT_ERRORS,
    EXIT_FAILED,
    EXIT_INVARIANTS,
    EXIT_OK,
    EXIT_VIOLATIONS,
    ConfigError,
)
from scenarios.outputs import check_output, write_json, write_text
from scenarios.release import model, page, paired, parts, runner, verdict
from scenarios.release import plan as release_plan
from scenarios.release.parts import PartResult
from scenarios.results import environment
from scenarios.results.files import RELEASE
from scenarios.results.metadata import code, collect
from scenarios.results.table import wrapped
from storages import StorageOptions
from vfab.codec import Derived

#: Every file a release writes into its directory (checked before any work).
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
    paired.FILE,
)


@dataclasses.dataclass(frozen=True)
class ReleaseRequest:
    """What `release` was asked: *storages* (checked usable where the user
    named them: *explicit*), the million run's (None: the defaults among
    them), the directory and whether to replace the release's files in it,
    the last release to judge against and the gate's threshold."""

    storages: tuple[str, ...]
    out: Path
    options: StorageOptions = dataclasses.field(default_factory=StorageOptions)
    million: tuple[str, ...] | None = None
    force: bool = False
    against: Path | None = None
    fail_above: float = verdict.DEFAULT_FAIL_ABOVE
    quick: bool = False


@dataclasses.dataclass(frozen=True)
class Against:
    """The verdict against the last release, as release.json keeps it."""

    directory: str
    verdict: verdict.Verdict


@dataclasses.dataclass(frozen=True)
class ReleaseFile(Derived):
    """release.json: what ran, each part's status and files, the verdict
    against the last release (None without one) and the exit status."""

    metadata: dict[str, Any]
    shortened: list[str]
    parts: list[PartResult]
    verdicts: list[str]
    against: Against | None
    exit_status: int

    JSON_SKIP: ClassVar[tuple[str, ...]] = ()

    def to_json(self) -> dict[str, Any]:
        return {**RELEASE.header(), **super().to_json()}


@dataclasses.dataclass(frozen=True)
class Outcome:
    """A release made: its file, the verdict (None without --against), the
    directory."""

    file: ReleaseFile
    judged: verdict.Verdict | None
    out: Path

    @property
    def exit_status(self) -> int:
        return self.file.exit_status

    def text(self) -> str:
        """What release prints: the verdict first, a line per part, where
        the rest is."""
        judged, out = self.judged, self.out
        lines = []
        if judged is not None:
            lines.append(judged.text().rstrip("\n"))
        else:
            lines.append(
                "Verdict: no last release named (--against DIR compares with one)"
            )
            lines += [wrapped(f"  {line}") for line in self.file.verdicts]
        lines.append("")
        for part in self.file.parts:
            detail = f": {part.detail}" if part.detail else ""
            files = f" ({', '.join(part.files)})" if part.files else ""
            lines.append(wrapped(f"{part.title}: {part.status}{detail}{files}"))
        lines.append("")
        if judged is not None and judged.details():
            lines.append(
                wrapped(
                    f"Every compared cell: vfab-bench compare {judged.old.path} {out}"
                )
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


# -- the checks before any work ------------------------------------------------


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


def million_storages(
    given: tuple[str, ...] | None, names: tuple[str, ...]
) -> tuple[str, ...]:
    """The million run's storages: those *given*, or the defaults among
    *names*, or the first name."""
    if given:
        if len(set(given)) != len(given):
            raise ConfigError("--million-storage names a storage twice")
        return given
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


def plan_of(request: ReleaseRequest) -> release_plan.ReleasePlan:
    """The plan of *request* (its storages checked usable), every part's
    input checked before any work; default storages that cannot run here
    left out, as run does."""
    options = request.options
    names = tuple(
        n for n in request.storages if storages.get(n, options).unavailable() is None
    )
    if not names:
        raise ConfigError("none of the storages can run here")
    million = million_storages(request.million, names)
    plan = release_plan.plan(names, request.quick, options, Path(tempfile.gettempdir()))
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


def counted(
    plan: release_plan.ReleasePlan,
) -> tuple[release_plan.ReleasePlan, str | None]:
    """*plan* without its counts part where valgrind, vgdb or strace is
    missing (the part says why; the verdict says there is no gate), and
    why it cannot count (None when it can)."""
    try:
        check_tools()
    except ConfigError as e:
        skipped = {**plan.skipped, "counts": str(e)}
        return dataclasses.replace(plan, counts=None, skipped=skipped), str(e)
    return plan, None


def cannot_count_line(why: str, against: Path | None) -> str:
    """The one line a release that cannot count says first, before any
    progress: why (with what to install) and what it means for the gate."""
    then = (
        f"; the verdict against {against} will be NOT FULLY CHECKED"
        if against is not None
        else "; this release will hold no counts to gate a later one on"
    )
    return f"vfab-bench release: cannot count: {why}{then}"


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


# -- the release ---------------------------------------------------------------


def _metadata(
    request: ReleaseRequest,
    plan: release_plan.ReleasePlan,
    start: dict[str, Any],
    probes: list[float],
) -> dict[str, Any]:
    """release.json's metadata: the run's, the code, the storages, the
    machine at the start and end (*start*, *probes*: taken before the
    parts)."""
    meta = collect(plan.table)
    del meta["config"]  # each part's file has its own
    return {
        **meta,
        "code": code(),
        "cpu_count": os.cpu_count(),
        "storages": list(plan.storages),
        "quick": request.quick,
        "fail_above": request.fail_above,
        "environment": environment.record(start, probes + environment.probes()),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec="seconds"
        ),
    }


def make(
    request: ReleaseRequest,
    say: Callable[[str], None],
    progress: runner.ProgressFactory,
    warn: Callable[[str], None] = _stderr,
) -> Outcome:
    """The release *request* asks, into its directory: every input checked
    first, then the parts, release.json and index.html; the verdict
    against the last release when one is named.  *say* prints a line of
    progress, *progress* makes each part's, *warn* says what the release
    cannot do before any progress."""
    # Absolute: the micro part's pytest runs in the project's directory.
    out = Path(os.path.abspath(request.out))
    plan = plan_of(request)
    old = None
    if request.against is not None:
        check_apart(request.against, out)
        old = model.load(request.against)
        model.check_comparable(
            model.identity(old), new_identity(plan), str(request.against)
        )
    check_out(out, request.force)
    plan, cannot_count = counted(plan)
    if cannot_count is not None:
        warn(cannot_count_line(cannot_count, request.against))
    if request.against is not None:
        unpaired = paired.cannot_pair(request.against)
        if unpaired is not None:
            warn(paired.unpaired_line(request.against, unpaired))
    shortened = plan.shortened()
    for line in shortened:
        say(f"release: {line}")
    start, probes = environment.snapshot(), environment.probes()
    out.mkdir(exist_ok=True)
    results = runner.run(plan, out, request.force, say, progress)
    if request.against is not None:
        # The wall time again, with the last release's environment beside
        # this one's (release/paired.py): what the verdict's wall time reads.
        results.append(
            paired.run(
                request.against,
                plan.table.storages,
                request.quick,
                out,
                request.force,
                lambda line: say(f"release: paired: {line}"),
            )
        )
    metadata = _metadata(request, plan, start, probes)
    scale = next(p for p in results if p.name == "scale")
    file = ReleaseFile(
        metadata,
        shortened,
        results,
        parts.verdicts(scale),
        against=None,
        exit_status=exit_status(results),
    )
    new = model.load(out, file.to_json())
    judged = None
    if old is not None:
        assert request.against is not None
        judged = verdict.compare(old, new, request.fail_above)
        # Against the last release the gate decides: a storage WRONG as it
        # was, or by a known upstream bug, is a line of the verdict, not a
        # failure of this release (a part that failed or went unchecked is).
        unjudged = [p for p in results if p.status != "violations"]
        file = dataclasses.replace(
            file,
            against=Against(str(request.against), judged),
            exit_status=worst(exit_status(unjudged), judged.exit_status),
        )
    write_json(out / "release.json", file.to_json(), request.force)
    write_text(out / "index.html", page.page(new, judged), request.force)
    return Outcome(file, judged, out)
