"""vfab-bench compare: two files or release directories of one kind, or one
file's storages against one of them (--baseline); what a kind compares
and which options it takes is its Kind's (scenarios.registry)."""

from __future__ import annotations

import argparse

from scenarios import argtypes
from scenarios.cli.outputs import add_output_options, check_outputs, emit
from scenarios.errors import ConfigError
from scenarios.results import significance
from scenarios.results.files import ResultsError


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "compare",
        help="compare two --json files (run, sweep, scale or counts) or two "
        "release directories, or storages against one",
        description="Compare each cell (storage x phase; sweep: storage, "
        "variant and objects per transaction) of NEW with OLD, or of each "
        "storage of FILE with --baseline's: '3.47 ms -> 4.34 ms: 1.25x slower "
        "(+25%)'; 'not significant (1.02x)' when a permutation test of the "
        "statistic finds no difference (false discovery rate "
        f"{significance.ALPHA} across the cells); 'inconclusive (5 vs 5 "
        "trials; at least 7 needed)' when the trials are too few to decide.  "
        "Files must be of one kind, data set size and seed.  Scale files: "
        "ops/s and p99 per point, sub-window against sub-window.  Count "
        "files (run --counts --json): a cell differs when it moved by more "
        "than 2% where exact, by more than its spread where not.  Two "
        "release directories: the verdict of release --against, exit 1 on a "
        "count cell grown above --fail-above (default 2%) or a storage "
        "newly WRONG.",
    )
    p.add_argument(
        "old",
        type=argtypes.path,
        metavar="OLD",
        help="the reference: a file or a release directory",
    )
    p.add_argument(
        "new",
        type=argtypes.path,
        nargs="?",
        metavar="NEW",
        help="the file or release directory compared",
    )
    p.add_argument(
        "--baseline",
        metavar="STORAGE",
        help="compare every other storage of OLD.json against this one",
    )
    p.add_argument("--cpu", action="store_true", help="CPU time instead of wall")
    p.add_argument(
        "--statistic",
        choices=list(significance.STATISTICS),
        help="what to compare (default: the statistic the files record, "
        f"run --statistic; {significance.DEFAULT_STATISTIC} for files that "
        "record none)",
    )
    p.add_argument(
        "--pvalues",
        action="store_true",
        help="show each cell's p-value and its q-value (adjusted across the cells)",
    )
    p.add_argument(
        "--changed",
        action="store_true",
        help="show only the cells that changed or that the trials could not "
        "decide (the summary still counts every cell)",
    )
    p.add_argument(
        "--fail-above",
        type=argtypes.percentage,
        metavar="PCT",
        help="exit 1 when a significant slowdown exceeds PCT (e.g. 10%%)",
    )
    add_output_options(
        p,
        json="write cells as JSON",
        markdown="write Markdown",
        html="write a page: per storage, a chart of old and new (each trial "
        "drawn) and the verdicts",
    )
    p.set_defaults(handler=main)


#: compare's options a kind may not take (Kind.compare_options says which
#: it does).
OPTIONS = ("baseline", "cpu", "statistic", "pvalues", "changed", "fail_above")


def main(args: argparse.Namespace) -> int:
    from scenarios import registry

    if (args.new is None) == (args.baseline is None):
        raise ConfigError("give NEW or --baseline STORAGE (one of them)")
    kind, old = registry.find(args.old, "compare")
    new = None
    if args.new is not None:
        other, new = registry.find(args.new, "compare")
        if other is not kind:
            link = " (report --cost-model links times and counts)"
            counts = "counts" in (kind.name, other.name)
            raise ResultsError(
                f"{args.old} is a {kind.noun} and {args.new} a {other.noun}: "
                f"compare two of one kind{link if counts else ''}"
            )
    for name in (*OPTIONS, *args.outputs):
        if getattr(args, name) not in (None, False) and name not in (
            kind.compare_options
        ):
            option = "--" + name.replace("_", "-")
            raise ConfigError(f"{option} does not apply to {kind.plural}")
    check_outputs(args)
    assert kind.compare is not None  # registry.find checked it
    a = registry.load(kind, old)
    b = None if new is None else registry.load(kind, new)
    return emit(args, kind.compare(a, b, args))
