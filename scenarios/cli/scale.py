"""vfab-bench scale: how many clients each storage carries."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

import storages
from scenarios.argtypes import (
    at_least,
    between,
    non_negative_float,
    positive_float,
)
from scenarios.bench.config import scale_for
from scenarios.cli.args import (
    add_data_set_options,
    add_mix_options,
    add_progress_option,
    client_counts,
    progress,
    refuse_unavailable,
    storage_names,
    target_of,
)
from scenarios.cli.outputs import add_output_options, check_outputs, emit
from scenarios.clients import concurrency
from scenarios.clients.memory import check_memory
from scenarios.errors import (
    EXIT_ERRORS,
    EXIT_INVARIANTS,
    EXIT_VIOLATIONS,
    ConfigError,
    check_status,
)
from scenarios.interrupts import exit_status, last_signal, stop_line
from scenarios.load.history import Parts, write_history
from scenarios.load.mix import OPERATIONS, LoadConfig
from scenarios.load.target import add_target_option
from scenarios.outputs import Writer
from scenarios.results.formatter import plural
from scenarios.results.kinds import View
from scenarios.scale.config import (
    DEFAULT_CLIENTS,
    DEFAULT_WINDOWS,
    MAX_FAULT_S,
    MAX_WINDOWS,
    Fault,
    ScaleConfig,
)
from scenarios.scale.options import (
    ClusterOptions,
    add_cluster_options,
    add_concurrency_options,
    cluster_address,
    cluster_storage_options,
    fleets_of,
    refuse_cooperation,
)

if TYPE_CHECKING:
    from scenarios.scale.model import ScalePoint


#: The highest --rate (operations per second over all clients).
MAX_RATE = 1e6


def fault_type(text: str) -> Fault:
    try:
        return Fault.parse(text)
    except ConfigError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "scale",
        help="throughput and latency against the number of clients, per storage",
        usage="%(prog)s [--storage NAMES] [--clients N,...] [OPTIONS]",
        description="Per storage and client count, a fresh shared database "
        "and that many client processes running the operation mix: "
        "throughput, latency, errors, CPU, then the data checked against "
        f"every attempt (docs/scale.md).  Exit {EXIT_VIOLATIONS} on a "
        f"violation, {EXIT_INVARIANTS} if not fully checked, {EXIT_ERRORS} "
        "if the data are right but operations failed.",
    )
    p.add_argument(
        "--storage",
        type=storage_names,
        default=None,
        metavar="NAMES",
        help="shared storages, comma-separated (default: zeo; `vfab-bench "
        "storages` lists those processes can share)",
    )
    add_target_option(
        p,
        help="a running shared database instead (HOST:PORT, a URI or a "
        "ZConfig file) holding a data set",
    )
    p.add_argument(
        "--clients",
        type=client_counts,
        default=list(DEFAULT_CLIENTS),
        metavar="N,N,...",
        help="client counts, each a point and each client a process (default: "
        + ",".join(map(str, DEFAULT_CLIENTS))
        + ")",
    )
    add_data_set_options(p)
    p.add_argument(
        "--duration",
        type=positive_float,
        default=10.0,
        metavar="SECONDS",
        help="measured seconds of each point",
    )
    p.add_argument(
        "--warmup",
        type=non_negative_float,
        default=3.0,
        metavar="SECONDS",
        help="unmeasured seconds before each window",
    )
    p.add_argument(
        "--windows",
        type=at_least(1, MAX_WINDOWS),
        default=DEFAULT_WINDOWS,
        metavar="N",
        help="sub-windows of each window: the point's interval",
    )
    p.add_argument(
        "--rate",
        type=between(0, MAX_RATE, above=True),
        metavar="OPS",
        help="open loop: Poisson arrivals at OPS per second over all clients "
        "(default: closed loop)",
    )
    p.add_argument(
        "--fault",
        type=fault_type,
        metavar="SPEC",
        help="kill-server:AT[,restart:AFTER] or kill-client:AT (seconds into "
        f"the window, 0 to {MAX_FAULT_S:,.0f})",
    )
    p.add_argument(
        "--wait-timeout",
        type=positive_float,
        default=3.0,
        metavar="SECONDS",
        help="how long an operation waits for an absent server (default: 3)",
    )
    p.add_argument(
        "--no-check",
        dest="check",
        action="store_false",
        help="record no history and skip the consistency check",
    )
    add_concurrency_options(p)
    add_cluster_options(p)
    add_mix_options(p)
    storages.add_storage_options(p)
    add_output_options(
        p,
        json="write the points as JSON (kind scale)",
        history="keep every attempt's history as JSON lines",
        plot="draw ops/s and p99 against clients (.svg or .png)",
    )
    add_progress_option(p)
    p.set_defaults(handler=main)


def config_from(args: argparse.Namespace) -> tuple[ScaleConfig, str | None]:
    target = target_of(args)
    names = ["target"] if target is not None else (args.storage or ["zeo"])
    if target is not None and args.fault and args.fault.kind == "kill-server":
        raise ConfigError("--fault kill-server needs a server this run starts")
    weights = {op.name: getattr(args, f"weight_{op.name}") for op in OPERATIONS}
    load = LoadConfig.from_values(
        target or "127.0.0.1:8100",
        weights=weights,
        skew=args.skew,
        retries=args.retries,
        backoff_ms=args.backoff_ms,
    )
    config = ScaleConfig(
        storages=tuple(names),
        clients=tuple(args.clients),
        scale=scale_for(args.size, args.scale),
        seed=args.seed,
        duration_s=args.duration,
        warmup_s=args.warmup,
        rate=args.rate,
        fault=args.fault,
        load=load,
        wait_timeout_s=args.wait_timeout,
        check=args.check,
        windows=args.windows,
        concurrency=args.concurrency,
        clients_per_process=args.clients_per_process,
        workers=args.workers or 0,
    )
    if args.history is not None and not args.check:
        raise ConfigError("--history needs the check: drop --no-check")
    return config, target


def main(args: argparse.Namespace) -> int:
    from scenarios.results import environment, metadata
    from scenarios.scale import kind, runner
    from scenarios.scale.model import ScaleRun

    config, target = config_from(args)
    options = storages.options_from_args(args)
    refuse_unavailable(config.storages, options)
    if config.fault is not None and config.fault.kind == "kill-server":
        for name in config.storages:
            if name != runner.TARGET and not storages.REGISTRY[name].starts_server:
                raise ConfigError(f"--fault kill-server: {name} has no server to kill")
    if not config.workers:
        per = concurrency.per_process(
            config.concurrency, config.clients_per_process, max(config.clients)
        )
        check_memory(max(config.clients), per_process=per)
    refuse_cooperation(config, options, target)
    cluster = ClusterOptions(
        args.workers or 0,
        args.master_bind_host,
        args.master_port,
        args.connect_timeout,
    )
    address = cluster_address(cluster)
    if address is not None:
        options = cluster_storage_options(config, options, address[0])
    check_outputs(args)
    if config.workers:
        # locust patches this process with gevent on import: once the input
        # is checked, before anything opens a client or starts a thread.
        import scenarios.clients.remote.cluster  # noqa: F401
    meta = metadata.collect(config)
    start, probes = environment.snapshot(), environment.probes()

    interrupted = False
    history: Parts | None = [] if args.history is not None else None
    try:
        with (
            progress(args, "scale") as shown,
            fleets_of(cluster, config, args.quiet) as fleets,
        ):
            points = runner.run(config, options, target, shown, history, fleets=fleets)
    except runner.ScaleInterrupted as e:
        points, interrupted = e.points, True
    meta["environment"] = environment.record(start, probes + environment.probes())
    if not args.quiet:
        for warning in meta["environment"].get("warnings", []):
            print(f"warning: {warning}", file=sys.stderr)
    run = ScaleRun(meta, tuple(points))
    notes = []
    if interrupted:
        last = points[-1] if points else None
        if last is None or not last.interrupted:
            notes.append(
                "vfab-bench scale: the point in progress measured nothing and "
                "is not reported; nothing of it to check"
            )
        notes.append(stop_line(last_signal()))
    # Nothing measured, nothing written.
    view = kind.view(run) if points else View(files=dict.fromkeys(args.outputs, none))
    files = {**view.files, "history": none}
    if history:
        files["history"] = lambda: Writer(lambda path: write_history(path, history))
    status = _status(config, points, interrupted)
    if not interrupted and status:
        notes.append(status_line(config, points, status))
    return emit(args, View(view.text, files, "\n".join(notes), status))


def none() -> None:
    return None


def status_line(config: ScaleConfig, points: list[ScalePoint], status: int) -> str:
    """The last line of a run that does not exit 0: its status and the
    points that give it (issue 36: exit 4 said nowhere why)."""

    def named(chosen: list[ScalePoint]) -> str:
        names = [f"{p.storage}, {plural(p.clients, 'client')}" for p in chosen]
        more = f" and {len(names) - 3} more" if len(names) > 3 else ""
        return "; ".join(names[:3]) + more

    if status == EXIT_VIOLATIONS:
        why = "violations in the data at " + named(
            [p for p in points if p.check.ok is False]
        )
    elif status == EXIT_INVARIANTS:
        why = "not fully checked at " + named(
            [
                p
                for p in points
                if p.incomplete is not None or (config.check and p.check.ok is None)
            ]
        )
    else:
        failing = [p for p in points if p.failed or p.errors]
        failed = sum(p.failed for p in failing)
        errors = sum(sum(p.errors.values()) for p in failing)
        why = (
            f"{plural(failed, 'operation')} ran out of retries and "
            f"{plural(errors, 'error')} at {named(failing)}"
        )
    return f"vfab-bench scale: exit {status}: {why}"


def _status(config: ScaleConfig, points: list[ScalePoint], interrupted: bool) -> int:
    if interrupted:
        return exit_status(last_signal())
    return check_status(
        any(p.check.ok is False for p in points),
        (config.check and any(p.check.ok is None for p in points))
        or any(p.incomplete is not None for p in points),
        any(p.failed or p.errors for p in points) and config.fault is None,
    )
