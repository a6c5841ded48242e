"""vfab-bench zeoloop: locust's ZEO load without locust, the baseline."""

from __future__ import annotations

import argparse
import sys

from scenarios.argtypes import at_least, positive_float, seed
from scenarios.cli.interrupts import exit_status, last_signal, stop_line
from scenarios.cli.outputs import add_output_options, check_outputs, write_json
from scenarios.errors import (
    EXIT_FAILED,
    EXIT_INVARIANTS,
    EXIT_OK,
    ConfigError,
)
from scenarios.load.journal import Journal, verify
from scenarios.load.mix import OPERATIONS
from scenarios.load.options import add_load_options, config_from
from scenarios.load.session import preflight

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
        "ops/s and p50/p95/p99 per operation, then check the data's "
        f"invariants.  Exit {EXIT_FAILED} if an operation ran out of retries, "
        f"{EXIT_INVARIANTS} if the invariants do not hold.\n\noperations:\n" + ops,
    )
    p.add_argument("--users", type=at_least(1, MAX_USERS), default=1, metavar="N")
    p.add_argument(
        "--processes", type=at_least(1, MAX_PROCESSES), default=1, metavar="P"
    )
    p.add_argument("--duration", type=positive_float, default=10.0, metavar="SECONDS")
    add_load_options(p)
    p.add_argument("--seed", type=seed, help="seed the users' random streams")
    add_output_options(p, json="write the rows as JSON")
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    from scenarios.load import zeoloop

    config = config_from(args)
    if args.processes > args.users:
        raise ConfigError(f"--processes {args.processes} exceeds --users {args.users}")
    check_outputs(args)
    preflight(config)

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
    journal = Journal()
    for r in results:
        journal.absorb(r.journal)
    try:
        report = verify(config.target, journal)
    except KeyboardInterrupt:
        print("invariants not checked: interrupted", file=sys.stderr)
        return exit_status(last_signal())
    print(report.summary())
    for line in report.problems:
        print(f"  {line}")
    if args.json is not None:
        doc = {
            "users": args.users,
            "processes": args.processes,
            "duration_s": args.duration,
            "rows": [r.to_json() for r in rows],
            "invariants_ok": report.ok,
            "interrupted": interrupted,
        }
        write_json(args.json, doc, args.force)
    if interrupted:
        signum = last_signal()
        print(stop_line(signum), file=sys.stderr)
        return exit_status(signum)
    if not report.ok:
        return EXIT_INVARIANTS
    lost = sum(r.lost for r in results)
    if lost:
        print(
            f"vfab-bench zeoloop: {lost} client process(es) sent no result "
            "(killed or stuck): their operations are not counted nor checked",
            file=sys.stderr,
        )
        return EXIT_FAILED
    return EXIT_FAILED if rows[-1].failures else EXIT_OK
