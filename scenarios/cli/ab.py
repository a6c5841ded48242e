"""vfab-bench ab: two environments measured together, judged pair by pair
(scenarios.ab; docs/ab.md)."""

from __future__ import annotations

import argparse

import storages
from scenarios.argtypes import at_least, path, seed
from scenarios.cli.args import (
    add_progress_option,
    add_storage_option,
    progress,
    selected_storages,
)
from scenarios.cli.outputs import add_output_options, check_outputs, emit

#: The most pairs and warmups one call may ask.
MAX_PAIRS = 10_000


def cell_list(text: str) -> tuple[str, ...]:
    from scenarios.ab.cells import SOURCES

    names = tuple(n.strip() for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in SOURCES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown cells {', '.join(unknown) or repr(text)}; choose from "
            f"{', '.join(SOURCES)}"
        )
    return names


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    from scenarios.ab.defaults import (
        DEFAULT_CELLS,
        DEFAULT_PAIRS,
        DEFAULT_STORAGES,
        DEFAULT_WARMUPS,
        MODES,
        QUICK_PAIRS,
    )

    p = sub.add_parser(
        "ab",
        help="two environments (versions, checkouts, releases) measured "
        "together, judged by their paired ratios",
        description="Measure the same cells in two environments A and B "
        "together: interleaved (each round A and B in a random order) or as "
        "a duet (A and B at the same moment, one core each), and judge each "
        "cell by its ratios B/A pair by pair, so that a machine that speeds "
        "up or slows down moves both sides alike.  A and B are each an "
        "existing virtual environment (a directory with bin/python), "
        'requirements on top of this project\'s own ("ZODB==6.2", several '
        "separated by spaces, or a .txt file), a package's checkout (installed "
        "from it) or a release directory (rebuilt from the versions it "
        "recorded).  Environments are built with uv and cached by what they "
        "hold; both sides measure with this checkout's code (docs/ab.md).",
    )
    p.add_argument("a", metavar="A", help="the environment compared against")
    p.add_argument("b", metavar="B", help="the environment judged")
    p.add_argument(
        "--mode",
        choices=MODES,
        default="interleaved",
        help="interleaved (RMIT) or duet (same moment, one core each)",
    )
    p.add_argument(
        "--cells",
        type=cell_list,
        default=DEFAULT_CELLS,
        metavar="NAMES",
        help="what to measure, comma-separated: rows (the 2000 rows), micro "
        "(the micro-benchmarks), matrix (the matrix's cells), scale (a scale "
        f"point) (default: {','.join(DEFAULT_CELLS)})",
    )
    add_storage_option(p, ",".join(DEFAULT_STORAGES))
    p.add_argument(
        "--pairs",
        type=at_least(1, MAX_PAIRS),
        metavar="N",
        help=f"timed pairs per cell (default: {DEFAULT_PAIRS}; --quick: {QUICK_PAIRS})",
    )
    p.add_argument(
        "--warmups",
        type=at_least(0, MAX_PAIRS),
        metavar="N",
        help=f"untimed pairs first (default: {DEFAULT_WARMUPS})",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="fewer pairs, a few short micro-benchmarks",
    )
    p.add_argument(
        "--seed",
        type=seed,
        default=0,
        help="seed of the interleaved order (the data set is run's, seed 2000)",
    )
    p.add_argument(
        "--env-cache",
        type=path,
        metavar="DIR",
        help="where built environments are kept (default: $VFAB_AB_CACHE or "
        "~/.cache/vfab-loadtest/ab)",
    )
    add_output_options(
        p,
        json="write the pairs and each cell's verdict as JSON",
        html="write a page: the verdict, then each cell's ratio B/A and its "
        "interval, largest change first",
    )
    add_progress_option(p)
    storages.add_storage_options(p)
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    from scenarios.ab import defaults, envs, page, runner

    pairs_default = defaults.QUICK_PAIRS if args.quick else defaults.DEFAULT_PAIRS
    names = selected_storages(args)
    config = runner.ABConfig(
        a=args.a,
        b=args.b,
        mode=args.mode,
        cells=tuple(args.cells),
        storages=tuple(names) if names else defaults.DEFAULT_STORAGES,
        pairs=args.pairs if args.pairs is not None else pairs_default,
        warmups=args.warmups if args.warmups is not None else defaults.DEFAULT_WARMUPS,
        quick=args.quick,
        seed=args.seed,
        cache=args.env_cache if args.env_cache is not None else envs.default_cache(),
        options=storages.options_from_args(args),
    )
    check_outputs(args)
    with progress(args, "ab", tick=False) as shown:
        result = runner.run(config, shown)
    return emit(args, page.view(result))
