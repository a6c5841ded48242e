"""Try issue 28's bad inputs, environments and signals on a checkout's
commands and print how many cases each command and each kind handled.

"Handled": the case's every expectation met (tests/support/hostile.py says which:
the exit status it allows, one line on stderr for bad input naming what it
names, no traceback, the inputs byte-identical, nothing left in TMPDIR, no
process left, no hang past the case's bound, its own checks).  -v lists
each case and, for those not handled, every expectation it missed.

    .venv/bin/python tools/probe_failures.py [--checkout DIR] [--jobs N]
        [--only TEXT] [--kind KIND] [-v] [--list]

DIR is a source tree with its own .venv (default: this one); the matrix is
this tree's.  Ctrl-C, SIGTERM or SIGHUP stop it: every server, helper and
temporary directory it started is removed first.

Before the fixes: main at 328e30d (a checkout with its own .venv), on a
2-core machine shared with other test runs, 374 s:

    .venv/bin/python tools/probe_failures.py --checkout MAIN --jobs 2 -v

    handled / tried, per command        per kind
      census           0 / 4              data changed        0 / 8
      compare          0 / 6              wrong verdict       0 / 4
      history          0 / 10             hang                5 / 9
      release          0 / 7              encoding/pipe       0 / 9
      report           0 / 11             escape sequences    0 / 3
      report --pyperf  0 / 5              malformed file      0 / 12
      run              1 / 7              environment         2 / 18
      run --counts     0 / 7              signals             0 / 9
      run --pyperf     0 / 1              resource limits     0 / 3
      scale            2 / 4              release paths       0 / 4
      serve            0 / 2              IPv6                0 / 5
      sweep            1 / 1              history dirs        0 / 4
      verify           2 / 20             zeoloop reconnect   0 / 1
      zeoloop          1 / 4              controls           13 / 13
      all              7 / 89             all                20 / 102

The controls (handled on main: a missing or non-JSON file, a run read,
compared and listed, census read-only, verify, census, zeoloop and serve
on 127.0.0.1, run stopped by SIGTERM) are kept out of the per-command
tally; they show the harness sees "handled" where it is.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import FrameType

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support import hostile_proc  # noqa: E402
from tests.support.hostile import KINDS, Result, cases, run_case  # noqa: E402
from tests.support.hostile_files import make_bases  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def _stop(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _unmount_below(directory: Path) -> None:
    with open("/proc/mounts") as f:
        points = [line.split()[1] for line in f]
    for point in sorted(points, reverse=True):
        if point.startswith(str(directory) + "/"):
            subprocess.run(["umount", "-l", point], capture_output=True)


def tally(results: list[Result]) -> str:
    """handled / tried per command (controls apart) and per kind."""
    by_command: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0, 0])
    by_kind: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0, 0])
    for r in results:
        handled = int(not r.problems())
        for table, key in ((by_kind, r.case.kind), (by_command, r.case.command)):
            if table is by_command and r.case.kind == "controls":
                continue
            if r.outcome is None:
                table[key][2] += 1
            else:
                table[key][0] += handled
                table[key][1] += 1
    lines = []
    for title, table, order in (
        (
            "per command (issue 28's cases, controls apart)",
            by_command,
            sorted(by_command),
        ),
        ("per kind", by_kind, [k for k in KINDS if k in by_kind]),
    ):
        lines.append(f"handled / tried, {title}")
        total = [0, 0, 0]
        for key in order:
            handled, tried, skipped = table[key]
            total = [total[0] + handled, total[1] + tried, total[2] + skipped]
            extra = f"  ({skipped} skipped)" if skipped else ""
            lines.append(f"  {key:18} {handled:3} / {tried}{extra}")
        extra = f"  ({total[2]} skipped)" if total[2] else ""
        lines.append(f"  {'all':18} {total[0]:3} / {total[1]}{extra}")
        lines.append("")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--checkout", type=Path, default=ROOT, help="the tree to probe (its .venv)"
    )
    parser.add_argument("--jobs", type=int, default=2, help="cases run at once (1-2)")
    parser.add_argument("--only", default="", help="the cases whose id has TEXT")
    parser.add_argument("--kind", default="", help="the cases of this kind")
    parser.add_argument("-v", "--verbose", action="store_true", help="every case")
    parser.add_argument(
        "--list", action="store_true", help="list the cases and what each expects"
    )
    args = parser.parse_args()
    checkout = hostile_proc.Checkout(args.checkout.resolve())
    problem = checkout.problem()
    if problem:
        parser.error(problem)
    if not 1 <= args.jobs <= 2:
        parser.error("--jobs: 1 or 2 (two cores, shared)")
    chosen = [
        c
        for c in cases()
        if args.only in c.id and (not args.kind or c.kind == args.kind)
    ]
    if not chosen:
        parser.error("no case matches")
    if args.list:
        try:
            for c in chosen:
                status = "any" if c.status is None else "/".join(map(str, c.status))
                print(f"{c.id}  [exit {status}, {c.bound:g} s]")
        except BrokenPipeError:  # `| head`
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _stop)
    scratch = Path(tempfile.mkdtemp(prefix="probe-failures-"))
    scratch.chmod(0o755)  # as /tmp is: the suite runs initdb as postgres
    results: list[Result] = []
    started = time.monotonic()
    try:
        print(
            f"probing {checkout.root}: {len(chosen)} cases; making the inputs",
            flush=True,
        )
        try:
            bases = make_bases(checkout, scratch / "bases")
        except RuntimeError as e:  # the checkout cannot make its own inputs
            print(f"probe_failures: {e}", file=sys.stderr)
            return 1
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            futures = [
                pool.submit(run_case, c, checkout, bases, scratch) for c in chosen
            ]
            try:
                for future in futures:
                    result = future.result()
                    results.append(result)
                    report(result, args.verbose)
            except BaseException:
                hostile_proc.STOP.set()
                for future in futures:
                    future.cancel()
                raise
    except KeyboardInterrupt:
        print("\nstopped: cleaning up", file=sys.stderr, flush=True)
        return 130
    finally:
        hostile_proc.STOP.set()
        hostile_proc.kill_marked(hostile_proc.RUN_VAR, hostile_proc.RUN_ID, grace=0)
        _unmount_below(scratch)
        with contextlib.suppress(OSError):
            shutil.rmtree(scratch, ignore_errors=True)
    print(f"\n{checkout.root}, {time.monotonic() - started:.0f} s\n")
    print(tally(results))
    return 0


def report(result: Result, verbose: bool) -> None:
    problems = result.problems()
    took = f" ({result.outcome.elapsed:.0f} s)" if result.outcome else ""
    if result.outcome is None:
        print(f"skip  {result.case.id}: {result.skipped}", flush=True)
    elif not problems:
        if verbose:
            print(f"ok    {result.case.id}{took}: {result.last_line}", flush=True)
    else:
        print(f"FAIL  {result.case.id}{took}", flush=True)
        if verbose:
            for problem in problems:
                print(f"        - {problem}")
            print(f"        | {result.last_line}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
