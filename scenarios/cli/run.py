"""vfab-bench run: the eight phases on each storage, the 2000 table."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import storages
from scenarios import report
from scenarios.cli.args import (
    add_storage_options,
    check_output,
    non_negative_int,
    positive_int,
    storage_list,
    storage_options,
    write_output,
)
from scenarios.config import ConfigError, RunConfig, scale_for
from scenarios.phases import PHASES
from vfab.generate import DEFAULT_SEED, SIZES

#: preset name -> (repeat, warmups)
PRESETS = {"quick": (1, 0), "rigorous": (10, 2)}


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    phases = "\n".join(f"  {p.name:22} {p.description}" for p in PHASES)
    run = sub.add_parser(
        "run",
        help="run the phases on storages and print the table",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run the phases of the 2000 table, each trial on a "
        "fresh database, and print wall time, CPU time and objects "
        "loaded/stored per phase and storage.\n\nphases:\n" + phases,
    )
    run.add_argument(
        "--storage",
        type=storage_list,
        action="append",
        metavar="NAMES",
        help="comma-separated storages, repeatable (default: "
        f"{','.join(storages.DEFAULT_STORAGES)}; "
        f"choices: {', '.join(storages.REGISTRY)})",
    )
    run.add_argument(
        "--size",
        choices=list(SIZES),
        default=None,
        help="data set size (default: small, the 2000 data set); "
        + ", ".join(f"{k} = {v}x" for k, v in SIZES.items()),
    )
    run.add_argument(
        "--scale",
        type=positive_int,
        metavar="N",
        help="any multiple of the small data set instead of --size",
    )
    run.add_argument(
        "--repeat",
        type=positive_int,
        metavar="N",
        help="timed trials per storage, each on a fresh database (default: 3)",
    )
    run.add_argument(
        "--warmups",
        type=non_negative_int,
        metavar="N",
        help="untimed trials before them (default: 1)",
    )
    run.add_argument(
        "--preset",
        choices=list(PRESETS),
        help="quick: 1 trial, no warmup; rigorous: 10 trials, 2 warmups "
        "(--repeat/--warmups override)",
    )
    run.add_argument(
        "--seed",
        type=int,
        default=DEFAULT_SEED,
        help=f"data generator seed (default: {DEFAULT_SEED})",
    )
    run.add_argument(
        "--json",
        type=Path,
        metavar="FILE",
        help="write raw samples and metadata as JSON",
    )
    run.add_argument(
        "--markdown", type=Path, metavar="FILE", help="write the tables as Markdown"
    )
    run.add_argument(
        "--force", action="store_true", help="replace existing --json/--markdown files"
    )
    run.add_argument(
        "-q", "--quiet", action="store_true", help="no progress lines on stderr"
    )
    add_storage_options(run)
    run.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    from scenarios import runner

    names = [n for group in args.storage for n in group] if args.storage else None
    repeat, warmups = PRESETS.get(args.preset, (3, 1))
    config = RunConfig(
        storages=tuple(names) if names else storages.DEFAULT_STORAGES,
        scale=scale_for(args.size, args.scale),
        repeat=args.repeat if args.repeat is not None else repeat,
        warmups=args.warmups if args.warmups is not None else warmups,
        seed=args.seed,
        options=storage_options(args),
    )
    for name in config.storages:
        reason = storages.get(name, config.options).unavailable()
        if reason is not None and names:
            raise ConfigError(f"storage {name!r} is not available: {reason}")
    if config.options.zeo_address is not None and "zeo" in config.storages:
        from storages.zeo import check_reachable

        check_reachable(config.options.zeo_address)
    check_output(args.json, args.force)
    check_output(args.markdown, args.force)

    progress = None if args.quiet else (lambda line: print(line, file=sys.stderr))
    result = runner.run(config, progress)
    print(report.text(result), end="")
    if args.json is not None:
        text = json.dumps(result.to_json(), indent=1) + "\n"
        write_output(args.json, text, args.force)
    if args.markdown is not None:
        write_output(args.markdown, report.markdown(result), args.force)
    return 0
