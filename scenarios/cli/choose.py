"""vfab-bench choose: which storage for this workload, on the virtual
fab's mix or on the user's own database (--from)."""

from __future__ import annotations

import argparse
import sys

import storages
from scenarios.argtypes import at_least, positive_float
from scenarios.bench.config import scale_for
from scenarios.checker.known_bugs import exit_status as judged_status
from scenarios.choose.config import (
    DEFAULT,
    QUICK,
    ChooseConfig,
    candidates,
    is_candidate,
)
from scenarios.cli.args import (
    add_data_set_options,
    add_progress_option,
    client_counts,
    progress,
)
from scenarios.cli.outputs import add_output_options, check_outputs, emit
from scenarios.errors import EXIT_INVARIANTS, EXIT_VIOLATIONS, ConfigError
from scenarios.interrupts import exit_status, last_signal, stop_line
from scenarios.results import environment, metadata
from scenarios.scale.config import MAX_WINDOWS


def storage_names(text: str) -> list[str]:
    """Candidate names, each one choose can measure (a ZODB database
    shared by processes, or kept on disk by one)."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    valid = [n for n, f in storages.REGISTRY.items() if is_candidate(f)]
    for name in names:
        if name not in valid:
            raise argparse.ArgumentTypeError(
                storages.unknown_storage(name, valid, what=" choose can measure")
            )
    if not names:
        raise argparse.ArgumentTypeError("--storage: no storage named")
    return names


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "choose",
        help="which storage for this workload: a verdict, ranked, with reasons",
        usage="%(prog)s [--storage NAMES] [--clients N,...] [--from DB] [...]",
        description="For each storage (default: every one that runs here), "
        "the virtual fab's mix at each --clients count (scale's clients, "
        "the data checked against every attempt as verify checks it), or "
        "--from your own database copied into each, every record compared; "
        "then the verdict first: storages ranked with one line of reasons "
        "each, a storage found WRONG never recommended, and when the "
        "ranking changes (docs/choose.md).  Exit "
        f"{EXIT_VIOLATIONS} when a storage is WRONG (but by a known upstream "
        f"bug, named), {EXIT_INVARIANTS} when one could not be checked.",
    )
    p.add_argument("--storage", type=storage_names, default=None, metavar="NAMES",
                   help="candidates, comma-separated (default: every one that "
                   "runs here; `vfab-bench storages` lists them)")  # fmt: skip
    p.add_argument("--clients", type=client_counts, default=None, metavar="N,N,...",
                   help="the concurrency expected: client counts (default: "
                   + ",".join(map(str, DEFAULT.clients)) + "; --quick: "
                   + ",".join(map(str, QUICK.clients)) + ")")  # fmt: skip
    p.add_argument("--from", dest="source", default=None, metavar="SOURCE",
                   help="your database instead of the mix: a FileStorage "
                   "file, a ZConfig file or a URI, opened read-only")  # fmt: skip
    p.add_argument("--quick", action="store_true",
                   help="fewer client counts, shorter windows")  # fmt: skip
    p.add_argument("--duration", type=positive_float, default=None,
                   metavar="SECONDS", help="measured seconds of each point "
                   f"(default: {DEFAULT.duration_s:g}; --quick "
                   f"{QUICK.duration_s:g})")  # fmt: skip
    p.add_argument("--windows", type=at_least(2, MAX_WINDOWS), default=None,
                   metavar="N", help="sub-windows of each point: its "
                   "interval")  # fmt: skip
    add_data_set_options(p)
    storages.add_storage_options(p)
    add_output_options(
        p,
        json="write the candidates and the verdict as JSON (kind choose)",
        html="write the verdict and the curves as a page",
    )
    add_progress_option(p)
    p.set_defaults(handler=main)


def config_from(
    args: argparse.Namespace, options: storages.StorageOptions
) -> ChooseConfig:
    preset = QUICK if args.quick else DEFAULT
    names = args.storage or candidates(options)
    for name in names:
        reason = storages.get(name, options).unavailable()
        if reason is not None:
            raise ConfigError(f"storage {name!r} is not available: {reason}")
    return ChooseConfig(
        storages=tuple(names),
        clients=tuple(args.clients or preset.clients),
        duration_s=args.duration or preset.duration_s,
        warmup_s=preset.warmup_s,
        windows=args.windows or preset.windows,
        scale=scale_for(args.size, args.scale),
        seed=args.seed,
        quick=args.quick,
        source=args.source,
    )


def main(args: argparse.Namespace) -> int:
    from scenarios.choose import kind, measure
    from scenarios.choose import source as from_source
    from scenarios.choose.model import ChooseRun
    from scenarios.scale.runner import ScaleInterrupted

    options = storages.options_from_args(args)
    config = config_from(args, options)
    check_outputs(args)
    opened = from_source.open_source(config.source) if config.source else None
    meta = metadata.collect(config)
    start, probes = environment.snapshot(), environment.probes()
    try:
        with progress(args, "choose") as shown:
            if opened is not None:
                found = from_source.run(config, options, opened, shown)
            else:
                found = measure.run(config, options, shown)
    except ScaleInterrupted:
        print(stop_line(last_signal()), file=sys.stderr)
        return exit_status(last_signal())
    finally:
        if opened is not None:
            opened.close()
    meta["environment"] = environment.record(
        start, probes + environment.probes(), measure.own_tasks(config, options)
    )
    run = ChooseRun(meta, tuple(found))
    view = kind.view(run)
    status = judged_status(c.state() for c in run.candidates)
    return emit(args, type(view)(view.text, view.files, "", status))
