"""vfab-bench matrix: zodbshootout's benchmarks by concurrency, concurrency
kind and objects per transaction, and RelStorage's SQLite FAQ's claims
answered from the run."""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Callable
from typing import Any

import storages
from scenarios.argtypes import at_least, ranged
from scenarios.cli.args import (
    add_progress_option,
    check_storages_usable,
    progress,
    storage_columns,
    storage_list,
)
from scenarios.cli.outputs import add_output_options, check_outputs, emit
from scenarios.matrix.config import MatrixConfig
from scenarios.results import significance
from storages.options import shown


def _counts(most: int) -> Callable[[str], tuple[int, ...]]:
    """An argparse type: N,N,... each from 1 to *most* (its range in --help)."""

    def parse(text: str) -> tuple[int, ...]:
        from scenarios.matrix.config import parse_counts

        try:
            values = parse_counts(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
        for v in values:
            if not 1 <= v <= most:
                raise argparse.ArgumentTypeError(
                    f"must be from 1 to {most:,} each, not {shown(str(v))}"
                )
        return values

    return ranged(parse, 1, most)


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    from scenarios.matrix import config as c

    p = sub.add_parser(
        "matrix",
        help="zodbshootout's benchmarks by concurrency, kind and transaction "
        "size; the SQLite FAQ's claims checked",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=textwrap.fill(
            "Run zodbshootout's benchmarks on each storage by concurrent "
            "clients (threads, processes, or greenlets where the driver "
            "yields) and objects per transaction: each cell's time per object "
            "with its interval, each group's check, and RelStorage's SQLite "
            "FAQ's claims answered.  Benchmarks: "
            + ", ".join(c.BENCHMARKS)
            + " (what each times, and zodbshootout's name for it: "
            "docs/matrix.md).",
            79,
        ),
    )
    p.add_argument(
        "--storage",
        type=storage_list,
        action="append",
        metavar="NAMES",
        help=f"comma-separated storages, repeatable (default: "
        f"{','.join(c.DEFAULT_STORAGES)})",
    )
    p.add_argument(
        "--concurrency",
        type=_counts(c.MAX_CONCURRENCY),
        default=None,
        metavar="N,N,...",
        help="concurrent clients (default: "
        f"{','.join(map(str, c.DEFAULT_CONCURRENCY))})",
    )
    p.add_argument(
        "--kind",
        default=None,
        metavar="KINDS",
        help="threads, processes, greenlets, comma-separated (default: "
        f"{','.join(c.DEFAULT_KINDS)}, each where the storage can run it; "
        "named, a storage that cannot is refused)",
    )
    p.add_argument(
        "--objects",
        type=_counts(c.MAX_OBJECTS),
        default=None,
        metavar="N,N,...",
        help=f"objects per transaction (default: "
        f"{','.join(map(str, c.DEFAULT_OBJECTS))})",
    )
    p.add_argument(
        "--benchmark",
        default=None,
        metavar="NAMES",
        help=f"comma-separated benchmarks (default: all: {','.join(c.BENCHMARKS)})",
    )
    p.add_argument(
        "--rounds",
        type=at_least(1, c.MAX_ROUNDS),
        default=None,
        help=f"rounds per cell, the samples of its statistic (default: "
        f"{c.DEFAULT_ROUNDS}; --quick {c.QUICK_ROUNDS})",
    )
    p.add_argument(
        "--transactions",
        type=at_least(1, c.MAX_TRANSACTIONS),
        default=None,
        help="transactions per client per round (default: "
        f"{c.DEFAULT_TRANSACTIONS}; --quick {c.QUICK_TRANSACTIONS})",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="the FAQ's four benchmarks at 1 and 20 clients, 1 and 100 "
        "objects, fewer rounds: enough to answer its claims (axes named "
        "explicitly win)",
    )
    p.add_argument(
        "--statistic",
        choices=list(significance.STATISTICS),
        default=significance.DEFAULT_STATISTIC,
        help="what each cell is over its rounds",
    )
    add_output_options(
        p,
        json="write every round as JSON (report, compare and history read it)",
        html="write a self-contained page: charts as the FAQ draws them, the "
        "claims, the tables",
        plot="draw every benchmark's charts (SVG)",
    )
    add_progress_option(p)
    storages.add_storage_options(p)
    p.set_defaults(handler=main)


def config_of(args: argparse.Namespace) -> MatrixConfig:
    """The MatrixConfig *args* describe (ConfigError for bad input): what
    --quick sets, unless an axis is named."""
    from scenarios.matrix import config as c

    options = storages.options_from_args(args)
    names, _explicit = storage_columns(args, options, c.DEFAULT_STORAGES)
    q = args.quick
    benchmarks = (
        c.parse_names(args.benchmark)
        if args.benchmark is not None
        else c.QUICK_BENCHMARKS
        if q
        else tuple(c.BENCHMARKS)
    )

    def given(value: Any, quick: Any, default: Any) -> Any:
        return value if value is not None else quick if q else default

    return c.MatrixConfig(
        storages=names,
        concurrency=given(args.concurrency, c.QUICK_CONCURRENCY, c.DEFAULT_CONCURRENCY),
        kinds=c.parse_names(args.kind) if args.kind is not None else c.DEFAULT_KINDS,
        objects=given(args.objects, c.QUICK_OBJECTS, c.DEFAULT_OBJECTS),
        benchmarks=benchmarks,
        rounds=given(args.rounds, c.QUICK_ROUNDS, c.DEFAULT_ROUNDS),
        transactions=given(
            args.transactions, c.QUICK_TRANSACTIONS, c.DEFAULT_TRANSACTIONS
        ),
        statistic=args.statistic,
        quick=q,
        kinds_named=args.kind is not None,
        options=options,
    )


def main(args: argparse.Namespace) -> int:
    from scenarios.matrix import kind, runner
    from scenarios.matrix.config import DEFAULT_STORAGES

    config = config_of(args)
    check_outputs(args)  # before any database is opened: a refusal creates nothing
    options = config.options
    _names, explicit = storage_columns(args, options, DEFAULT_STORAGES)
    check_storages_usable(config.storages, options, explicit=explicit)
    runner.plan(config, lambda line: None)  # a kind a storage cannot run: now
    with progress(args, "matrix") as shown:
        result = runner.run(config, shown)
    return emit(args, kind.view(result, config.statistic))
