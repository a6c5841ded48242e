"""vfab-bench zeoloop: locust's ZEO load without locust, the baseline."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from scenarios.cli.args import (
    check_output,
    non_negative_int,
    positive_int,
    write_output,
)
from scenarios.errors import ConfigError
from scenarios.load import session as load
from storages.zeo import add_zeo_address_option

#: Exit statuses beyond the CLI's own: as locust's run with locustfile.py.
EXIT_FAILURES = 1
EXIT_INVARIANTS = 3


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be above 0, not {text}")
    return value


def non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {text}")
    return value


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    ops = "\n".join(
        f"  {op.name:16} weight {op.weight:2}  {op.description}"
        for op in load.OPERATIONS
    )
    p = sub.add_parser(
        "zeoloop",
        help="the locust ZEO load as plain threads and processes (baseline)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run locustfile.py's operations against a ZEO server "
        "without locust: --users threads split over --processes processes "
        "(one ZEO client each), closed loop, for --duration seconds; print "
        "ops/s and p50/p95/p99 per operation, then check the data's "
        "invariants.  Exit 1 if an operation ran out of retries, 3 if the "
        "invariants do not hold.\n\noperations:\n" + ops,
    )
    add_zeo_address_option(
        p,
        default=load.DEFAULT_ADDRESS,
        help="server holding a data set",
        parse=False,  # LoadConfig parses it, as it does locust's
    )
    p.add_argument("--users", type=positive_int, default=1, metavar="N")
    p.add_argument("--processes", type=positive_int, default=1, metavar="P")
    p.add_argument("--duration", type=positive_float, default=10.0, metavar="SECONDS")
    p.add_argument("--skew", type=non_negative_float, default=1.0, metavar="S")
    p.add_argument("--retries", type=non_negative_int, default=10, metavar="N")
    p.add_argument("--backoff-ms", type=non_negative_float, default=5.0, metavar="MS")
    for op in load.OPERATIONS:
        p.add_argument(
            f"--weight-{op.name.replace('_', '-')}",
            type=non_negative_int,
            default=op.weight,
            metavar="W",
        )
    p.add_argument("--seed", type=int, help="seed the users' random streams")
    p.add_argument("--json", type=Path, metavar="FILE", help="write the rows as JSON")
    p.add_argument("--force", action="store_true", help="replace an existing --json")
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    from scenarios.load import zeoloop

    config = load.LoadConfig.from_values(
        address=args.zeo_address,
        weights={op.name: getattr(args, f"weight_{op.name}") for op in load.OPERATIONS},
        skew=args.skew,
        retries=args.retries,
        backoff_ms=args.backoff_ms,
    )
    if args.processes > args.users:
        raise ConfigError(f"--processes {args.processes} exceeds --users {args.users}")
    check_output(args.json, args.force)
    load.preflight(config)

    results = zeoloop.run(config, args.users, args.processes, args.duration, args.seed)
    rows = zeoloop.summarize(results)
    print(
        f"{args.users} users in {args.processes} processes, "
        f"{args.duration:g} s, {config.address_text}"
    )
    print(zeoloop.table(rows), end="")
    errors = [e for r in results for e in r.errors]
    for line in errors[:5]:
        print(f"error: {line}", file=sys.stderr)

    journal = load.Journal()
    for r in results:
        journal.absorb(r.journal)
    report = load.verify(config.address, journal)
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
        }
        write_output(args.json, json.dumps(doc, indent=1) + "\n", args.force)
    if not report.ok:
        return EXIT_INVARIANTS
    return EXIT_FAILURES if rows[-1].failures else 0
