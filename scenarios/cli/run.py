"""vfab-bench run: the phases on each storage, the 2000 table and the rows
that explain it (caches, indexes, updates and pack)."""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from pathlib import Path

import storages
from scenarios.bench.batching import DEFAULT_XLARGE_BATCH, DEFAULT_XLARGE_CACHE_SIZE
from scenarios.bench.config import RunConfig, scale_for
from scenarios.bench.phases import HOT_CACHE_SIZE, PHASES
from scenarios.bench.runner import profile_path
from scenarios.cli.args import (
    add_data_set_options,
    add_storage_options,
    check_output,
    check_storages_usable,
    non_negative_int,
    positive_int,
    storage_list,
    storage_options,
    write_output,
)
from scenarios.errors import ConfigError
from scenarios.results import report

ABOUT = "\n\n".join(
    textwrap.fill(paragraph, 79)
    for paragraph in (
        "Run the phases of the 2000 table, then each query cold, warm and hot, "
        "brute-force and from indexes, an update and a pack; each trial on a "
        "fresh database.  Print per phase and storage wall time, CPU time, "
        "objects loaded/stored, bytes written, peak RSS and ZEO client cache "
        "hits, then what the run left: size on disk, cost per object built, "
        "the ZEO server's counters.",
        "Hot rows raise the connection cache target to "
        f"{HOT_CACHE_SIZE:,} objects (in effect unbounded) while they run: "
        "ZODB's default, 400, cannot hold medium's library.  Every other row "
        "uses --cache-size.",
        "xlarge (a million objects and more) builds in batches, "
        f"--batch {DEFAULT_XLARGE_BATCH} --cache-size "
        f"{DEFAULT_XLARGE_CACHE_SIZE} unless given: peak RSS about 1.1 GB "
        "on file.  With ZODB's default cache every batch reloads what the "
        "next one needs (ten times the cost per object).",
    )
)

#: preset name -> (repeat, warmups)
PRESETS = {"quick": (1, 0), "rigorous": (10, 2)}


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    phases = "\n".join(f"  {p.name:32} {p.description}" for p in PHASES)
    run = sub.add_parser(
        "run",
        help="run the phases on storages and print the table",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=ABOUT + "\n\nphases:\n" + phases,
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
    add_data_set_options(run)
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
        "--batch",
        type=non_negative_int,
        metavar="N",
        help="commit every N objects while building the data set, trimming "
        "the connection cache between batches (bounded memory); 0: one "
        "transaction per phase, as in 2000 (default: 0 below xlarge, "
        f"{DEFAULT_XLARGE_BATCH} for xlarge)",
    )
    run.add_argument(
        "--profile",
        type=Path,
        metavar="DIR",
        help="write one cProfile file per phase and storage into DIR "
        "(created if missing), named STORAGE-SIZE-PHASE.prof; read them with "
        "pstats.  Profiling slows the timed code.",
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
        "--html",
        type=Path,
        metavar="FILE",
        help="write a self-contained HTML page: tables, charts, metadata",
    )
    run.add_argument(
        "--force",
        action="store_true",
        help="replace existing --json/--markdown/--html files",
    )
    run.add_argument(
        "-q", "--quiet", action="store_true", help="no progress lines on stderr"
    )
    add_storage_options(run)
    run.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    from scenarios.bench import runner

    names = [n for group in args.storage for n in group] if args.storage else None
    repeat, warmups = PRESETS.get(args.preset, (3, 1))
    config = RunConfig(
        storages=tuple(names) if names else storages.DEFAULT_STORAGES,
        scale=scale_for(args.size, args.scale),
        repeat=args.repeat if args.repeat is not None else repeat,
        warmups=args.warmups if args.warmups is not None else warmups,
        seed=args.seed,
        options=storage_options(args),
        batch=args.batch,
        profile_dir=args.profile,
    )
    check_storages_usable(config.storages, config.options, explicit=bool(names))
    check_output(args.json, args.force)
    check_output(args.markdown, args.force)
    check_output(args.html, args.force)
    check_profile_dir(config, args.force)

    progress = None if args.quiet else (lambda line: print(line, file=sys.stderr))
    result = runner.run(config, progress)
    print(report.text(result), end="")
    if args.json is not None:
        text = json.dumps(result.to_json(), indent=1) + "\n"
        write_output(args.json, text, args.force)
    if args.markdown is not None:
        write_output(args.markdown, report.markdown(result), args.force)
    if args.html is not None:
        from scenarios.results import html

        write_output(args.html, html.page(result), args.force)
    return 0


def check_profile_dir(config: RunConfig, force: bool) -> None:
    """Refuse, before the run, a --profile directory we cannot write into or
    whose profiles we would replace without --force; create it if missing."""
    directory = config.profile_dir
    if directory is None:
        return
    if directory.exists() and not directory.is_dir():
        raise ConfigError(f"--profile {directory} is not a directory")
    if not directory.exists():
        if not directory.parent.is_dir():
            raise ConfigError(f"directory {directory.parent} does not exist")
        try:
            directory.mkdir()
        except OSError as e:
            raise ConfigError(f"cannot create {directory}: {e.strerror}") from None
    if not force:
        for name in config.storages:
            for phase in PHASES:
                path = profile_path(directory, name, config.size, phase.name)
                if path.exists():
                    raise ConfigError(f"{path} exists; use --force to replace it")
