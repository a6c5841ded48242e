"""`release --against OLD`'s wall time measured with OLD's environment, not
against OLD's figures: OLD's environment is rebuilt from the versions and
commits it recorded, this one is the environment in use, and the 2000
rows run in both together, interleaved, each cell judged by its paired
ratios (scenarios.ab; docs/ab.md).  A machine that speeds up or slows
down between two releases moves both sides of each pair alike, so the
verdict's wall time need not be "not comparable" when either ran busy.

When OLD's environment cannot be rebuilt (no versions recorded, a package
installed from a local tree, uv missing or failing), the part is not run,
says why in one line, and the verdict compares the two tables unpaired.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import storages
from scenarios.ab import envs, report
from scenarios.ab.defaults import DEFAULT_PAIRS, DEFAULT_WARMUPS, QUICK_PAIRS
from scenarios.ab.judge import Judged, judge
from scenarios.errors import ConfigError, one_line
from scenarios.outputs import write_json
from scenarios.release.measures import Line, tally
from scenarios.release.model import Release
from scenarios.release.parts import PartResult, guarded

#: The part's name, title and file.
NAME = "paired"
TITLE = "Wall time, measured together with the last release (ab)"
FILE = "ab.json"


def this_environment() -> Path | None:
    """The virtual environment in use (its bin/python), or None."""
    prefix = Path(sys.prefix)
    return prefix if (prefix / "bin" / "python").exists() else None


def cannot_pair(against: Path) -> str | None:
    """Why the wall time cannot be measured with *against*'s environment
    (one line), or None when it can be tried (building it may still fail:
    run() says so)."""
    try:
        envs.parse(str(against), "the last release")
    except ConfigError as e:
        return str(e)
    if this_environment() is None:
        return f"this python ({sys.prefix}) is no virtual environment to pair with"
    return None


def unpaired_line(against: Path, why: str) -> str:
    """What release says first when it cannot pair."""
    return (
        f"vfab-bench release: wall time against {against} compared unpaired "
        f"(two runs apart, as before): cannot rebuild its environment: {why}"
    )


def run(
    against: Path,
    names: Sequence[str],
    quick: bool,
    out: Path,
    force: bool,
    say: Callable[[str], None],
) -> PartResult:
    """The 2000 rows on *names* (registry names) in *against*'s environment
    and this one together, into FILE; a part "not run" with the reason
    when *against*'s environment cannot be rebuilt."""
    # The workers' machinery, imported when a release pairs.
    from scenarios.ab import runner

    part = PartResult(NAME, TITLE)
    why = cannot_pair(against)
    names = [n for n in names if n in storages.REGISTRY]
    if why is None and not names:
        why = "no storage of the registry named"
    if why is not None:
        part.status, part.detail = "not run", why
        return part
    env = this_environment()
    config = runner.ABConfig(
        a=str(against.resolve()),
        b=str(env),
        cells=("rows",),
        storages=tuple(names),
        pairs=QUICK_PAIRS if quick else DEFAULT_PAIRS,
        warmups=0 if quick else DEFAULT_WARMUPS,
        quick=quick,
        cache=envs.default_cache(),
    )

    def body() -> None:
        say(
            f"the 2000 rows on {', '.join(names)}, {config.pairs} pairs after "
            f"{config.warmups} warmup, in {against}'s environment (rebuilt from "
            "its versions, once: cached) and this one, interleaved"
        )
        try:
            result = runner.run(config, say)
        except ConfigError as e:
            # Cannot be built here (uv, the index): unpaired, said so.
            part.status = "not run"
            part.detail = f"cannot rebuild its environment: {one_line(e)}"
            return
        part.data = result
        part.text = report.text(result)
        write_json(out / FILE, report.document(result), force)
        part.files.append(FILE)

    return guarded(part, body)


# -- in the verdict --------------------------------------------------------------


def _same(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def judged_with(old: Release, new: Release) -> tuple[Judged, ...]:
    """*new*'s wall time measured together with *old*'s environment, each
    cell judged (largest change first); () when *new* was not paired with
    *old* (no --against, another release, or it could not be)."""
    run = new.paired
    if run is None or not _same(Path(run.a.text), old.path):
        return ()
    return tuple(judge(run.cells))


def wall_line(judged: Sequence[Judged], old: Release, mode: str) -> Line:
    """The verdict's wall time from the pairs."""
    moved = [j for j in judged if j.significant]
    slower = [(j.name, j.words) for j in moved if (j.ratio or 1) > 1]
    faster = [(j.name, j.words) for j in moved if (j.ratio or 1) < 1]
    unsure = sum(not j.decidable and not j.short for j in judged)
    head = (
        f"{len(judged)} cells measured together with {old.path}'s environment "
        f"({mode} pairs, judged by their ratios)"
    )
    quiet = len(judged) - len(slower) - len(faster) - unsure
    return tally(
        head, slower, faster, quiet, f"{unsure} inconclusive" if unsure else ""
    )


def unpaired_note(new: Release) -> str | None:
    """Why *new*'s wall time was compared unpaired, when it was asked to
    pair and could not (None otherwise)."""
    part = new.part(NAME)
    if part is None or part.get("status") == "ok":
        return None
    return f"unpaired: {part.get('detail') or part.get('status')}"


def details(judged: Sequence[Judged]) -> str:
    """The paired cells' table."""
    return "\n".join(
        ["Wall time measured together (B: this release, A: the last)"]
        + report.tables(list(judged))
    )


def judged_json(judged: Sequence[Judged]) -> list[dict[str, object]]:
    return [
        {
            "cell": j.name,
            "pairs": j.pairs,
            "ratio": j.ratio,
            "low": j.low,
            "high": j.high,
            "q_value": j.q_value,
            "significant": j.significant,
            "verdict": j.words,
        }
        for j in judged
    ]
