"""Try every route a database arrives by with damaged and foreign ones, and
print per command how many of the cases were handled.

Issue 21, item 1.  "Handled": exit status 2, exactly one line on stderr
(locust: one ERROR line among its own), no traceback, and every file the
command was pointed at unchanged in bytes, the directory listing too (no
lock, tmp, tr0 or index file created).  A whole database through census's
read-only routes is a control: exit 0, nothing changed.  The matrix and
the running of one case are tests/support/routes.py's (tests/cli/test_routes.py
asserts each case).

    .venv/bin/python tools/probe_routes.py [--only TEXT] [--jobs N] [-v]
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.damaged_databases import make_bases  # noqa: E402
from tests.support.routes import cases, run_case  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="the cases whose name has TEXT")
    parser.add_argument("--jobs", type=int, default=2, help="cases run at once")
    parser.add_argument("-v", "--verbose", action="store_true", help="show every case")
    args = parser.parse_args()
    chosen = [case for case in cases() if args.only in case.id]
    tally: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
    with tempfile.TemporaryDirectory(prefix="probe-routes-") as tmp:
        scratch = Path(tmp)
        (scratch / "bases").mkdir()
        families = sorted({case.kind.family for case in chosen})
        bases = make_bases(scratch / "bases", families)
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            results = pool.map(lambda case: run_case(case, bases, scratch), chosen)
            for result in results:
                problems = result.problems()
                command = result.case.route.command
                tally[command][1] += 1
                last = (result.err.strip().splitlines() or [""])[-1][:200]
                if not problems:
                    tally[command][0] += 1
                    if args.verbose:
                        print(f"ok    {result.case.id}: {last}", flush=True)
                else:
                    print(f"FAIL  {result.case.id}: {'; '.join(problems)} | {last}")
    print("\nhandled / tried, per command")
    total = [0, 0]
    for command in sorted(tally):
        handled, tried = tally[command]
        total[0] += handled
        total[1] += tried
        print(f"  {command:10} {handled:3} / {tried}")
    print(f"  {'all':10} {total[0]:3} / {total[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
