"""vfab-bench zeoloop: locust's ZEO load without locust, the baseline."""

from __future__ import annotations

import argparse
import sys

from scenarios.argtypes import at_least, positive_float, seed
from scenarios.cli.outputs import add_output_options, check_outputs, emit
from scenarios.errors import (
    EXIT_ERRORS,
    EXIT_INVARIANTS,
    EXIT_VIOLATIONS,
    ConfigError,
    check_status,
)
from scenarios.interrupts import exit_status, last_signal, stop_line
from scenarios.load import consistency
from scenarios.load.history import History, Part, write_history
from scenarios.load.mix import OPERATIONS
from scenarios.load.options import add_load_options, config_from
from scenarios.load.session import preflight
from scenarios.outputs import Writer
from scenarios.results.kinds import View

#: The most threads and client processes zeoloop starts.
MAX_USERS = 10_000
MAX_PROCESSES = 1_000


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    ops = "\n".join(
        f"  {op.name:16} weight {op.weight:2}  {op.description}" for op in OPERATIONS
    )
    p = sub.add_parser(
        "zeoloop",
        help="the locust ZEO load as plain threads and processes (baseline)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run locustfile.py's operations against a shared database "
        "(--target, or the ZEO server at --zeo-address) without locust: "
        "--users threads split over --processes processes (one client "
        "each), closed loop, for --duration seconds; print "
        "ops/s and p50/p95/p99 per operation, then read the whole data set "
        "through a fresh client and check it against the history of every "
        "attempt (lost and phantom writes, index drift, lost updates, "
        f"inconsistent reads, dependency cycles).  Exit {EXIT_VIOLATIONS} on any "
        f"violation, {EXIT_INVARIANTS} if the data could not be fully checked, "
        f"{EXIT_ERRORS} if they are right but an operation ran out of retries or "
        "a client process was lost.\n\noperations:\n" + ops,
    )
    p.add_argument("--users", type=at_least(1, MAX_USERS), default=1, metavar="N")
    p.add_argument(
        "--processes", type=at_least(1, MAX_PROCESSES), default=1, metavar="P"
    )
    p.add_argument(
        "--duration",
        type=positive_float,
        default=10.0,
        metavar="SECONDS",
        help="seconds the users run",
    )
    add_load_options(p)
    p.add_argument(
        "--seed", type=seed, help="seed the users' random streams (default: unseeded)"
    )
    add_output_options(
        p,
        json="write the rows and the check as JSON",
        history="keep every attempt's history as JSON lines",
    )
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    from scenarios.load import zeoloop

    config = config_from(args)
    if args.processes > args.users:
        raise ConfigError(f"--processes {args.processes} exceeds --users {args.users}")
    check_outputs(args)
    preflight(config)
    baseline = consistency.read_baseline(config.target)

    results = zeoloop.run(config, args.users, args.processes, args.duration, args.seed)
    rows = zeoloop.summarize(results)
    if any(r.interrupted for r in results) and not (rows[-1].ops or rows[-1].failures):
        signum = last_signal()
        print(
            f"{stop_line(signum)} before any operation ended; nothing to check",
            file=sys.stderr,
        )
        return exit_status(signum)
    window = max((r.window_s for r in results), default=0.0)
    cut = (
        f" (interrupted after {window:.1f} s)"
        if any(r.interrupted for r in results)
        else ""
    )
    print(
        f"{args.users} users in {args.processes} processes, "
        f"{args.duration:g} s{cut}, {config.address_text}"
    )
    print(zeoloop.table(rows), end="")
    errors = [e for r in results for e in r.errors]
    for line in errors[:5]:
        print(f"error: {line}", file=sys.stderr)

    interrupted = any(r.interrupted for r in results)
    history = History()
    for r in results:
        history.absorb(r.history)
    try:
        report = consistency.verify(config.target, baseline, history)
    except KeyboardInterrupt:
        print("consistency not checked: interrupted", file=sys.stderr)
        return exit_status(last_signal())
    text = [report.summary(), f"  {report.what()}"]
    text += [f"  {line}" for line in report.lines()]
    context = {"target": config.address_text, "users": args.users}
    parts = [
        Part(
            context | {"check": report.to_json()},
            list(history),
            dict(history.sessions),
        )
    ]
    files = {
        "json": lambda: {
            "users": args.users,
            "processes": args.processes,
            "duration_s": args.duration,
            "rows": [r.to_json() for r in rows],
            "invariants_ok": report.ok,
            "consistency": report.to_json(),
            "interrupted": interrupted,
        },
        "history": lambda: Writer(lambda path: write_history(path, parts)),
    }
    lost = sum(r.lost for r in results)
    note = ""
    if lost:
        note = (
            f"vfab-bench zeoloop: {lost} client process(es) sent no result "
            "(killed or stuck): their operations are not counted; their history "
            "is, and the check covered it"
        )
    status = check_status(
        report.ok is False, report.ok is None, bool(lost or rows[-1].failures)
    )
    if interrupted:
        note, status = stop_line(last_signal()), exit_status(last_signal())
    return emit(args, View("\n".join(text) + "\n", files, note, status))
