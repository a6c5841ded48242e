"""vfab-bench zeoloop: locust's ZEO load without locust, the baseline."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from scenarios.argtypes import at_least, positive_float, seed
from scenarios.checker import consistency
from scenarios.cli.outputs import add_output_options, check_outputs, emit
from scenarios.errors import (
    EXIT_ERRORS,
    EXIT_INVARIANTS,
    EXIT_VIOLATIONS,
    ConfigError,
    check_status,
)
from scenarios.interrupts import exit_status, last_signal, stop_line, stopped
from scenarios.load.history import History, Part, write_history
from scenarios.load.options import add_load_options, config_from
from scenarios.load.session import preflight
from scenarios.outputs import Writer
from scenarios.results.formatter import plural
from scenarios.results.kinds import View

if TYPE_CHECKING:
    from scenarios.checker.check import Check
    from scenarios.clients.zeoloop import ProcessResult, Row

#: The least wait worth giving the check's client for its server (seconds).
MIN_CHECK_WAIT_S = 1.0
#: The most threads and client processes zeoloop starts.
MAX_USERS = 10_000
MAX_PROCESSES = 1_000
#: Files a zeoloop process holds besides its users' (its client's socket,
#: Python's own, the history file), with room; a user holds at most one
#: more (the temporary file of its commit in flight).
BASE_FILES = 40


def check_open_files(users: int, processes: int) -> None:
    """Raise the open-files limit to what a process of the users may need
    (within the hard limit: the client processes inherit it), or
    ConfigError naming the limit (issue 35: 'Too many open files' was each
    failed operation's error, exit 4)."""
    import resource

    need = -(-users // processes) + BASE_FILES
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or need <= soft:
        return
    if hard == resource.RLIM_INFINITY or need <= hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))
        return
    raise ConfigError(
        f"--users {users} in {plural(processes, 'process', 'processes')}: a "
        f"process may hold {need} files open at once (a commit in flight "
        f"holds a temporary file), more than the limit of {hard} (ulimit -n): "
        "raise it, or split the users over more --processes"
    )


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "zeoloop",
        help="the locust ZEO load as plain threads and processes (baseline)",
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
        "a client process was lost.  The operations and their weights: "
        "vfab-bench help mix.",
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
    from scenarios.clients import zeoloop

    config = config_from(args)
    if args.processes > args.users:
        raise ConfigError(f"--processes {args.processes} exceeds --users {args.users}")
    check_open_files(args.users, args.processes)
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
    errors = [e for r in results for e in r.errors]
    for line in errors[:5]:
        print(f"error: {line}", file=sys.stderr)
    interrupted = any(r.interrupted for r in results)
    history = History()
    for r in results:
        history.absorb(r.history)
    wait = zeoloop.check_wait(results)
    if wait < MIN_CHECK_WAIT_S:
        # Past the bound already (a client stuck on a server that stopped
        # answering): another wait for that server would overrun it.
        check = consistency.not_checked(
            f"no time left of zeoloop's bound ({zeoloop.BOUND_PAST_WINDOW_S:.0f} s "
            "past the window) to read the storage back: a client process was stuck"
        )
    else:
        check = consistency.checked(config.target, baseline, history, wait_timeout=wait)
    if (interrupted or stopped()) and not check.checked:
        print(f"consistency not checked: {check.why_not[0]}", file=sys.stderr)
        return exit_status(last_signal())
    return emit(args, _view(args, config.address_text, results, rows, check, history))


def _view(
    args: argparse.Namespace,
    where: str,
    results: list[ProcessResult],
    rows: list[Row],
    check: Check,
    history: History,
) -> View:
    """What a zeoloop run says: its table, the check, the files asked for,
    its notes and exit status."""
    from scenarios.clients import zeoloop

    interrupted = any(r.interrupted for r in results)
    window = max((r.window_s for r in results), default=0.0)
    cut = f" (interrupted after {window:.1f} s)" if interrupted else ""
    text = [
        f"{args.users} users in {args.processes} processes, "
        f"{args.duration:g} s{cut}, {where}\n" + zeoloop.table(rows).rstrip("\n")
    ]
    notes = []
    logged = sum(r.log_records for r in results)
    if logged:
        notes.append(
            f"vfab-bench zeoloop: the clients logged {plural(logged, 'warning')} "
            "(ZODB, ZEO), counted, not shown"
        )
    reconnects = sum(r.reconnects for r in results)
    if reconnects:
        text.append(
            f"{plural(reconnects, 'attempt')} cut by a lost connection to the "
            "server, each tried again once its client had connected again"
        )
    text.append(check.summary)
    text += [f"  {line}" for line in check.details()]
    context = {"target": where, "users": args.users}
    context |= {"check": check.to_json()}
    parts = [Part(context, list(history), dict(history.sessions))]
    files = {
        "json": lambda: {
            "users": args.users,
            "processes": args.processes,
            "duration_s": args.duration,
            "rows": [r.to_json() for r in rows],
            "reconnects": reconnects,
            "invariants_ok": check.ok,
            "consistency": check.to_json(),
            "interrupted": interrupted,
        },
        "history": lambda: Writer(lambda path: write_history(path, parts)),
    }
    lost = sum(r.lost for r in results)
    if lost:
        covered = "the check covered it" if check.checked else "nothing was checked"
        notes.append(
            f"vfab-bench zeoloop: {plural(lost, 'client process', 'client processes')} "
            f"sent no result (killed or stuck): none within {zeoloop.FINISH_S:.0f} s "
            "of the window's end (a server that stops answering holds a client "
            "for ever); their operations are not counted; their history is kept, "
            f"and {covered}"
        )
    status = check_status(
        check.ok is False, check.ok is None, bool(lost or rows[-1].failures)
    )
    if interrupted:
        notes.append(stop_line(last_signal()))
        status = exit_status(last_signal())
    return View("\n".join(text) + "\n", files, "\n".join(notes), status)
