"""vfab-bench compare: two result files (OLD -> NEW), or one file's storages
against one of them (--baseline), cell by cell; exit 1 with --fail-above
when a significant slowdown exceeds the threshold (for CI gating).  Two
release directories: the verdict release --against gives, read from both
(scenarios.release.verdict)."""

from __future__ import annotations

import argparse
import json
import sys

from scenarios import argtypes
from scenarios.cli.outputs import add_output_options, check_outputs
from scenarios.errors import ConfigError
from scenarios.outputs import write_text
from scenarios.results import compare, significance
from scenarios.results.formatter import plural

EXIT_SLOWER = 1


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


def main(args: argparse.Namespace) -> int:
    if (args.new is None) == (args.baseline is None):
        raise ConfigError("give NEW or --baseline STORAGE (one of them)")
    if args.old.is_dir() or (args.new is not None and args.new.is_dir()):
        return _releases(args)
    from scenarios.counts import commands as counts

    if counts.is_counts(args.old) or (args.new and counts.is_counts(args.new)):
        if args.html is not None:
            raise ConfigError("--html compares times; count files have none")
        return counts.compare_main(args)  # run --counts files
    check_outputs(args)
    if compare.is_scale(args.old) or (args.new and compare.is_scale(args.new)):
        return _scale(args)
    old = compare.load(args.old)
    if args.new is not None:
        new = compare.load(args.new)
        result = compare.compare_files(
            old, new, str(args.old), str(args.new), args.cpu, args.statistic
        )
    else:
        result = compare.compare_baseline(
            old, args.baseline, str(args.old), args.cpu, args.statistic
        )
    print(result.text(args.pvalues, args.changed), end="")
    if args.json is not None:
        text = json.dumps(result.to_json(), indent=1) + "\n"
        write_text(args.json, text, args.force)
    if args.markdown is not None:
        write_text(
            args.markdown, result.markdown(args.pvalues, args.changed), args.force
        )
    if args.html is not None:
        from scenarios.results import compare_page

        write_text(args.html, compare_page.page(result, args.changed), args.force)
    if args.fail_above is not None:
        failed = result.slowdowns_above(args.fail_above)
        if failed:
            cells = "; ".join(f"{c.column} {c.row}: {c.verdict}" for c in failed[:5])
            if len(failed) > 5:
                cells += f"; and {len(failed) - 5} more"
            slowdowns = plural(len(failed), "significant slowdown")
            print(
                f"vfab-bench compare: {slowdowns} above {args.fail_above:.0%}: {cells}",
                file=sys.stderr,
            )
            return EXIT_SLOWER
    return 0


#: Options that mean nothing for release directories.
NOT_FOR_RELEASES = ("baseline", "cpu", "statistic", "pvalues", "changed")


def _releases(args: argparse.Namespace) -> int:
    """Two release directories: the verdict, then every compared cell."""
    from scenarios.release import directory, verdict

    for name in NOT_FOR_RELEASES:
        if getattr(args, name) not in (None, False):
            option = "--" + name.replace("_", "-")
            raise ConfigError(f"{option} does not apply to release directories")
    assert args.new is not None  # --baseline refused above
    for path in (args.old, args.new):
        if not path.is_dir():
            raise ConfigError(
                f"{path} is not a directory: compare two release directories, "
                "or two result files"
            )
    old, new = directory.load(args.old), directory.load(args.new)
    directory.check_comparable(
        directory.identity(old), directory.identity(new), str(args.old)
    )
    check_outputs(args)
    fail_above = (
        verdict.DEFAULT_FAIL_ABOVE if args.fail_above is None else args.fail_above
    )
    result = verdict.compare(old, new, fail_above)
    if args.json is not None:
        write_text(args.json, json.dumps(result.to_json(), indent=1) + "\n", args.force)
    if args.markdown is not None:
        lines = [f"# {result.headline()}", ""]
        lines += [f"- **{x.part}**: {x.text}" for x in result.lines()]
        details = result.details()
        if details:
            lines += ["", "```", details.rstrip("\n"), "```"]
        write_text(args.markdown, "\n".join(lines) + "\n", args.force)
    if args.html is not None:
        from scenarios.release import page

        write_text(args.html, page.page(new, result), args.force)
    print(result.text(), end="")
    details = result.details()
    if details:
        print()
        print(details, end="")
    return result.exit_status


#: Options that mean nothing for scale files (one window per point).
NOT_FOR_SCALE = ("baseline", "cpu", "statistic", "fail_above", "pvalues", "changed")


def _scale(args: argparse.Namespace) -> int:
    """Two scale files: throughput and p99 per point, as ratios."""
    from scenarios.scale import compare as scale_compare
    from scenarios.scale.results import ScaleRun

    for name in NOT_FOR_SCALE:
        if getattr(args, name) not in (None, False):
            option = "--" + name.replace("_", "-")
            raise ConfigError(f"{option} does not apply to scale files")
    if args.html is not None:
        raise ConfigError("--html compares run or sweep files")
    assert args.new is not None  # --baseline refused above
    result = scale_compare.compare_scale(
        ScaleRun.read(args.old), ScaleRun.read(args.new), str(args.old), str(args.new)
    )
    print(result.text(), end="")
    if args.json is not None:
        write_text(args.json, json.dumps(result.to_json(), indent=1) + "\n", args.force)
    if args.markdown is not None:
        write_text(args.markdown, result.markdown(), args.force)
    return 0
