"""vfab-bench verify: is each shared storage right under contention?"""

from __future__ import annotations

import argparse
import os
import sys

import storages
from scenarios.argtypes import between, positive_float
from scenarios.bench.config import scale_for
from scenarios.checker import known_bugs
from scenarios.cli.args import (
    add_data_set_options,
    add_progress_option,
    client_counts,
    progress,
    refuse_unavailable,
    shared_storages,
    storage_names,
    target_of,
)
from scenarios.cli.outputs import add_output_options, check_outputs, emit
from scenarios.clients.memory import check_memory
from scenarios.errors import (
    EXIT_ERRORS,
    EXIT_INTERRUPTED,
    EXIT_INVARIANTS,
    EXIT_VIOLATIONS,
    ConfigError,
)
from scenarios.interrupts import exit_status, last_signal, stop_line
from scenarios.load.history import Parts, write_history
from scenarios.load.options import MAX_SKEW
from scenarios.load.target import add_target_option
from scenarios.outputs import Writer
from scenarios.results import metadata
from scenarios.results.kinds import View
from scenarios.verify.runner import (
    CONTENTION_SKEW,
    DEFAULT_BUDGET_S,
    DEFAULT_CLIENTS,
    VerifyConfig,
)

#: --quick: the smallest and a contended client count, a third of the load.
QUICK_CLIENTS = (2, 8)
QUICK_BUDGET_S = 20.0


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "verify",
        help="is each shared storage right under contention? (scenarios and a "
        "checked load)",
        description="For each shared storage (default: every one that runs "
        "here), or a --target: four deterministic scenarios (a readCurrent "
        "failure, a conflict at vote, ...) on a fresh database, then a "
        "write-heavy load with a steep skew at each --clients count, its data "
        "checked against the history of every attempt (docs/consistency.md).  "
        "The load windows share --budget; set-up and checks come on top.  "
        "Prints the verdict per storage "
        "first: right, WRONG, not fully checked or errors, and why.  Exit "
        f"{EXIT_VIOLATIONS} on any violation, {EXIT_INVARIANTS} if something "
        f"could not be checked, {EXIT_ERRORS} if the data are right but "
        f"operations failed, {EXIT_INTERRUPTED} on Ctrl-C; a known upstream "
        f"bug is named, and {EXIT_VIOLATIONS} too unless --expect-known-bugs.",
    )
    p.add_argument(
        "--storage",
        type=storage_names,
        default=None,
        help="shared storages, comma-separated (default: every one that runs "
        "here); choose from " + ", ".join(shared_storages()),
    )
    add_target_option(
        p,
        help="verify this running shared database instead (HOST:PORT, a "
        "zodburi URI or a ZConfig file) holding a data set; the scenarios "
        "write under root['vfab-verify']",
    )
    p.add_argument(
        "--clients",
        type=client_counts,
        default=None,
        metavar="N,N,...",
        help="client counts of the load (default: "
        + ",".join(map(str, DEFAULT_CLIENTS))
        + f"; --quick {','.join(map(str, QUICK_CLIENTS))})",
    )
    p.add_argument(
        "--budget",
        type=positive_float,
        default=None,
        metavar="SECONDS",
        help=f"seconds of load in all, 2 s a point at least (default: "
        f"{DEFAULT_BUDGET_S:g}; --quick {QUICK_BUDGET_S:g})",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help=f"{','.join(map(str, QUICK_CLIENTS))} clients, {QUICK_BUDGET_S:g} s "
        "of load (named ones win)",
    )
    p.add_argument(
        "--skew",
        type=between(0, MAX_SKEW),
        default=CONTENTION_SKEW,
        metavar="S",
        help="Zipf exponent of the capabilities the load picks (default: "
        f"{CONTENTION_SKEW:g}: the top one gets about 60%% of the picks)",
    )
    p.add_argument(
        "--no-scenarios",
        dest="scenarios",
        action="store_false",
        help="the load alone",
    )
    p.add_argument(
        "--expect-known-bugs",
        action="store_true",
        help=f"a known upstream bug (named) is not exit {EXIT_VIOLATIONS}",
    )
    p.add_argument(
        "--all",
        action="store_true",
        help="print what each point's check found, after the tables",
    )
    add_data_set_options(p)
    storages.add_storage_options(p)
    add_output_options(
        p,
        json="write the verdicts as JSON (kind verify)",
        history="keep every attempt's history as JSON lines",
    )
    add_progress_option(p)
    # None when --target is not given, so that an empty one is an error
    p.set_defaults(handler=main, target=None)
    p.unknown_hint = "the load's length is --budget SECONDS, --quick a shorter check"


def config_from(args: argparse.Namespace) -> tuple[VerifyConfig, str | None]:
    if args.target is not None and not args.target.strip():
        raise ConfigError(
            "empty --target: expected HOST:PORT, a URI or a ZConfig file "
            "(leave --target out to verify every shared storage)"
        )
    target = target_of(args)
    if target is not None:
        names = ["target"]
    elif args.storage:
        names = args.storage
    else:
        options = storages.options_from_args(args)
        names = [
            n
            for n in shared_storages()
            if storages.get(n, options).unavailable() is None
        ]
    quick = args.quick
    clients = args.clients or (QUICK_CLIENTS if quick else DEFAULT_CLIENTS)
    budget = args.budget or (QUICK_BUDGET_S if quick else DEFAULT_BUDGET_S)
    config = VerifyConfig(
        storages=tuple(names),
        clients=tuple(clients),
        budget_s=budget,
        scenarios=args.scenarios,
        skew=args.skew,
        scale=scale_for(args.size, args.scale),
        seed=args.seed,
    )
    return config, target


def main(args: argparse.Namespace) -> int:
    from scenarios.scale import runner as scale_runner
    from scenarios.verify import report, runner
    from scenarios.verify.preflight import check_data_set, refuse_outputs_inside

    config, target = config_from(args)
    options = storages.options_from_args(args)
    refuse_unavailable(config.storages, options)
    check_memory(max(config.clients))
    if target is not None:
        refuse_outputs_inside(target, {"--history": args.history, "--json": args.json})
    check_outputs(args)
    if target is not None:
        # Before the scenarios write into it: a vfab data set, read-only.
        check_data_set(target)
    meta = metadata.collect(config) | {"load_average": list(os.getloadavg())}
    history: Parts | None = [] if args.history is not None else None
    try:
        with progress(args, "verify") as shown:
            verdicts = runner.run(config, options, target, shown, history)
    except scale_runner.ScaleInterrupted:
        # 128 + the signal: 130 on Ctrl-C, 143 on SIGTERM, 129 on SIGHUP
        print(stop_line(last_signal()), file=sys.stderr)
        return exit_status(last_signal())
    meta["load_average_after"] = list(os.getloadavg())
    files = {
        "json": lambda: report.to_json(verdicts, meta),
        "history": lambda: Writer(lambda path: write_history(path, history or [])),
    }
    # One policy with release's (scenarios.checker.known_bugs.exit_status);
    # a known bug fails unless the user expects it.
    states = [v.state() for v in verdicts]
    status = known_bugs.exit_status(states, known_fails=not args.expect_known_bugs)
    text = report.text(verdicts, detail=args.all)
    return emit(args, View(text, files, status=status))
