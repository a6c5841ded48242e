"""How much a count moves with the process's layout alone: the same code
counted under several start-up layouts (the process as it starts, then
seeded shifts of its heap and of its types' version tags,
scenarios.counts.fixed.shift_layout: what an unrelated change does), each
cell's spread over them, and whether any two layouts would differ by more
than the gate's tolerance (scenarios.counts.compare).

    .venv/bin/python tools/count_layouts.py                       # 6 layouts
    .venv/bin/python tools/count_layouts.py --layouts 8 --storage file
    .venv/bin/python tools/count_layouts.py --json layouts.json

It prints one line per cell (client instructions; cells that cannot be
exact left out): the smallest and largest count, the spread
(max - min) / min, the largest change between two layouts; then how many
cells of at least 1 M instructions spread by 1% or more, and how many
pairs of layouts the gate would call changed.  Exit status 1 when any
pair would (the gate's tolerance no longer covers the layouts' spread),
0 otherwise.  Counts do not depend on the machine's load: it may run
beside other work, only more slowly.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scenarios.bench.config import RunConfig  # noqa: E402
from scenarios.counts import runner  # noqa: E402
from scenarios.counts.compare import EXACT_MIN_CHANGE, exact_tolerance  # noqa: E402
from scenarios.counts.model import INSTRUCTIONS, CountRun  # noqa: E402

#: The storages counted by default: the in-process ones a release counts.
DEFAULT_STORAGES = ("memory", "mapping", "file")
#: A cell this large spreading by this much is what the issue that asked
#: for this tool called layout-sensitive (docs/counts.md).
LARGE = 1_000_000
LARGE_SPREAD = 0.01


def spreads(run: CountRun) -> list[tuple[str, str, list[int]]]:
    """(storage, phase, the client's instructions per layout) of every
    exact cell, in the run's order."""
    out = []
    for r in run.results:
        cell = run.cell(r.storage, r.phase, "client", INSTRUCTIONS, r.size)
        if cell is None or not cell.exact:
            continue
        by_layout: dict[int, int] = {}
        for s in r.samples:
            by_layout.setdefault(s.layout, s.instructions)
        out.append((r.storage, r.phase, [by_layout[k] for k in sorted(by_layout)]))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layouts", type=int, default=6, help="default: 6")
    parser.add_argument(
        "--storage",
        default=",".join(DEFAULT_STORAGES),
        help=f"comma-separated (default: {','.join(DEFAULT_STORAGES)})",
    )
    parser.add_argument("--scale", type=int, default=1, help="default: 1 (small)")
    parser.add_argument("--json", type=Path, help="write the count file here")
    args = parser.parse_args(argv)
    if args.layouts < 2:
        parser.error("--layouts: at least 2")
    config = RunConfig(
        storages=tuple(s for s in args.storage.split(",") if s),
        scale=args.scale,
        rows="2000",
        repeat=1,
        warmups=1,
        budget_s=0,
    )
    runner.check_tools()
    run = runner.count(
        config, lambda text: print(text, file=sys.stderr), layouts=args.layouts
    )
    if args.json:
        args.json.write_text(json.dumps(run.to_json(), indent=1) + "\n")
    tolerance = exact_tolerance()
    large = tripped = 0
    print(f"{'storage':<9} {'task':<22} {'min':>11} {'max':>11} {'spread':>7}")
    for storage, phase, values in spreads(run):
        low, high = min(values), max(values)
        spread = (high - low) / low if low else 0.0
        pairs = [
            (a, b)
            for a, b in itertools.combinations(values, 2)
            if abs(b - a) > EXACT_MIN_CHANGE and abs(b / a - 1 if a else 1) > tolerance
        ]
        large += low >= LARGE and spread >= LARGE_SPREAD
        tripped += len(pairs)
        mark = "  <- would trip the gate" if pairs else ""
        print(
            f"{storage:<9} {phase:<22} {low:>11,} {high:>11,} "
            f"{spread * 100:>6.2f}%{mark}"
        )
    print(
        f"{args.layouts} layouts; cells of {LARGE / 1e6:g} M instructions or more "
        f"spreading by {LARGE_SPREAD:.0%} or more: {large}; pairs of layouts the "
        f"gate (±{tolerance:.0%} for an exact cell) would call changed: {tripped}"
    )
    return 1 if tripped else 0


if __name__ == "__main__":
    sys.exit(main())
