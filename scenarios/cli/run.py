"""vfab-bench run: the phases on each storage, the 2000 table and the rows
that explain it (caches, indexes, updates and pack)."""

from __future__ import annotations

import argparse
import textwrap
from pathlib import Path

import storages
from scenarios.argtypes import non_negative_int
from scenarios.bench.batching import DEFAULT_XLARGE_BATCH, DEFAULT_XLARGE_CACHE_SIZE
from scenarios.bench.config import RunConfig, scale_for
from scenarios.bench.phases import HOT_CACHE_SIZE, PHASES
from scenarios.bench.runner import profile_path
from scenarios.cli.args import (
    add_data_set_options,
    add_output_options,
    add_progress_option,
    add_storage_options,
    add_trial_options,
    check_outputs,
    check_storages_usable,
    progress,
    storage_columns,
    storage_list,
    storage_options,
    trials,
    write_json,
    write_output,
)
from scenarios.errors import EXIT_OK, ConfigError
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
    add_trial_options(run, "per storage", "before them")
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
    add_output_options(
        run,
        json="write raw samples and metadata as JSON",
        markdown="write the tables as Markdown",
    )
    add_progress_option(run)
    add_storage_options(run)
    run.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    from scenarios.bench import runner

    options = storage_options(args)
    names, explicit = storage_columns(args, options, storages.DEFAULT_STORAGES)
    repeat, warmups = trials(args)
    config = RunConfig(
        storages=names,
        scale=scale_for(args.size, args.scale),
        repeat=repeat,
        warmups=warmups,
        seed=args.seed,
        options=options,
        batch=args.batch,
        profile_dir=args.profile,
    )
    check_storages_usable(config.storages, config.options, explicit=explicit)
    check_outputs(args)
    check_profile_dir(config, args.force)

    result = runner.run(config, progress(args))
    print(report.text(result), end="")
    if args.json is not None:
        write_json(args.json, result.to_json(), args.force)
    if args.markdown is not None:
        write_output(args.markdown, report.markdown(result), args.force)
    return EXIT_OK


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
