"""vfab-bench run: the phases on each storage, the 2000 table and the rows
that explain it (caches, indexes, updates and pack)."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import storages
from scenarios import argtypes
from scenarios.argtypes import at_least
from scenarios.bench.config import (
    DEFAULT_BUDGET_S,
    DEFAULT_MAX_TRIALS,
    DEFAULT_REPEAT,
    DEFAULT_WARMUPS,
    ROWS,
    RunConfig,
)
from scenarios.bench.phases import PHASES
from scenarios.bench.runner import profile_path
from scenarios.cli.args import (
    add_data_set_options,
    add_progress_option,
    add_trial_options,
    check_storages_usable,
    data_set_scale,
    progress,
    storage_columns,
    storage_list,
    trials,
)
from scenarios.cli.outputs import add_output_options, check_outputs, emit
from scenarios.counts import COUNT_TRIALS
from scenarios.data.batching import DEFAULT_XLARGE_BATCH
from scenarios.errors import ConfigError
from scenarios.results.significance import DEFAULT_STATISTIC, STATISTICS

ABOUT = (
    "Time every phase on each storage, a fresh database per trial; print the "
    "2000 table and what else was measured (--all: every table).  Rows and "
    "options: docs/run.md; the phases: `vfab-bench help phases`."
)


#: (repeat, warmups) without --repeat, --warmups or --preset.
RUN_TRIALS = (DEFAULT_REPEAT, DEFAULT_WARMUPS)
#: The most trials per storage, and objects per batch (--batch).
MAX_TRIALS = 10_000
MAX_BATCH = 10**9


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    run = sub.add_parser(
        "run",
        help="run the phases on storages and print the table",
        description=ABOUT,
        usage="%(prog)s [--storage NAMES] [--size SIZE] [--json FILE] [OPTIONS]",
    )
    run.add_argument(
        "--storage",
        type=storage_list,
        action="append",
        metavar="NAMES",
        help="comma-separated storages, repeatable (default: the embedded "
        "ones and zeo; `vfab-bench storages` lists them)",
    )
    add_data_set_options(run)
    add_trial_options(run, "per storage", "rounds before them", RUN_TRIALS)
    g = next(a for a in run._action_groups if a.title == "trials")
    g.add_argument(
        "--budget",
        type=argtypes.non_negative_float,
        metavar="SECONDS",
        help="then rounds of the 2000 rows of unsettled storages for this "
        f"long (default: {DEFAULT_BUDGET_S:g}; 0 with --repeat or --preset)",
    )
    g.add_argument(
        "--max-trials",
        type=at_least(1, MAX_TRIALS),
        default=DEFAULT_MAX_TRIALS,
        metavar="N",
        help="at most this many trials per storage under --budget",
    )
    g.add_argument(
        "--rows",
        choices=list(ROWS),
        default="all",
        help="2000: only the eight rows of the 2000 table",
    )
    g.add_argument(
        "--statistic",
        choices=list(STATISTICS),
        default=DEFAULT_STATISTIC,
        metavar="STAT",
        help=f"what a time cell shows: {', '.join(STATISTICS)}",
    )
    run.add_argument(
        "--batch",
        type=at_least(0, MAX_BATCH),
        metavar="N",
        help="commit every N objects built (default: 0, one transaction per "
        f"phase; xlarge: {DEFAULT_XLARGE_BATCH:,})",
    )
    run.add_argument(
        "--profile",
        type=argtypes.path,
        metavar="DIR",
        help="write a cProfile file per phase and storage into DIR",
    )
    run.add_argument(
        "--counts",
        action="store_true",
        help="count instructions and I/O system calls instead of timing "
        "(docs/counts.md)",
    )
    run.add_argument("--all", action="store_true", help="print every table")
    add_output_options(
        run,
        json="write raw samples and metadata as JSON",
        html="write a page: tables and charts",
        markdown="write the tables as Markdown",
        pyperf="write the trials as a pyperf suite",
    )
    add_progress_option(run)
    storages.add_storage_options(run)
    run.set_defaults(handler=main)


def run_config(args: argparse.Namespace) -> tuple[RunConfig, bool]:
    """The run's configuration from its arguments, and whether the user
    named the storages.  With --counts, no budget: exactly --repeat counted
    trials (default COUNT_TRIALS; see scenarios.counts)."""
    options = storages.options_from_args(args)
    names, explicit = storage_columns(args, options, storages.DEFAULT_STORAGES)
    repeat, warmups = trials(args, RUN_TRIALS)
    budget = args.budget
    if getattr(args, "counts", False):
        if args.repeat is None and args.preset is None:
            repeat = COUNT_TRIALS
        budget = None
    elif budget is None and args.repeat is None and args.preset is None:
        budget = DEFAULT_BUDGET_S
    config = RunConfig(
        storages=names,
        scale=data_set_scale(args, Path(tempfile.gettempdir())),
        repeat=repeat,
        warmups=warmups,
        budget_s=budget or 0.0,
        max_trials=max(args.max_trials, repeat),
        rows=args.rows,
        statistic=args.statistic,
        seed=args.seed,
        options=options,
        batch=args.batch,
        profile_dir=args.profile,
    )
    return config, explicit


def main(args: argparse.Namespace) -> int:
    from scenarios.bench import runner

    config, explicit = run_config(args)
    check_storages_usable(config.storages, config.options, explicit=explicit)
    check_outputs(args)
    if args.counts and args.pyperf is not None:
        raise ConfigError("--pyperf writes times; a --counts run has none")
    if args.counts:
        return _counts(args, config)
    check_profile_dir(config, args.force)

    # Below xlarge, redrawn on events only: a ticker thread would wake
    # inside the timed phases, and the phases change often enough.
    with progress(args, "run", tick=config.xlarge) as shown:
        result = runner.run(config, shown)
    from scenarios.bench import kind, short

    rest = short.rest_of(args.json, args.html)
    return emit(args, kind.view(result, text="all" if args.all else "short", rest=rest))


def _counts(args: argparse.Namespace, config: RunConfig) -> int:
    """run --counts: every storage of *config* counted (scenarios.counts)."""
    from scenarios.counts import kind, runner

    if config.profile_dir is not None:
        raise ConfigError("--profile and --counts do not go together")
    if args.budget is not None:
        raise ConfigError("--counts counts exactly --repeat trials: no --budget")
    runner.check_tools()
    with progress(args, "run --counts", tick=False) as shown:
        run = runner.count(config, shown, child_progress=not args.quiet)
    return emit(args, kind.view(run))


def check_profile_dir(config: RunConfig, force: bool) -> None:
    """Refuse, before the run, a --profile directory we cannot write into or
    whose profiles we would replace without --force; create it if missing."""
    directory = config.profile_dir
    if directory is None:
        return
    paths = [
        profile_path(directory, name, config.size, phase.name)
        for name in config.storages
        for phase in PHASES
    ]
    for path in paths:  # a storage's name makes the file's
        problem = argtypes.too_long(str(path))
        if problem:
            raise ConfigError(f"--profile: {problem}")
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
        for path in paths:
            if path.exists():
                raise ConfigError(f"{path} exists; use --force to replace it")
