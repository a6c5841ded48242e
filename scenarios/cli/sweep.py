"""vfab-bench sweep: commit cost per object against objects per transaction."""

from __future__ import annotations

import argparse
import textwrap

import storages
from scenarios.argtypes import ranged
from scenarios.cli.args import (
    add_data_set_options,
    add_progress_option,
    add_trial_options,
    check_storages_usable,
    progress,
    storage_columns,
    storage_list,
    trials,
)
from scenarios.cli.outputs import add_output_options, check_outputs, emit
from scenarios.sweep.config import MAX_OBJECTS


def objects_list(text: str) -> tuple[int, ...]:
    from scenarios.sweep.config import parse_objects

    try:
        return parse_objects(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


ranged(objects_list, 1, MAX_OBJECTS)


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    from scenarios.sweep.config import DEFAULT_OBJECTS, DEFAULT_STORAGES, VARIANTS

    variants = "\n".join(f"  {v.name:6} {v.description}" for v in VARIANTS.values())
    p = sub.add_parser(
        "sweep",
        help="commit cost per object against objects per transaction",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=textwrap.fill(
            "Commit transactions of growing size on each storage and "
            "print the commit's wall and CPU time per object, for objects held "
            "in a BTree and in one flat PersistentList.  ZODB pickles a "
            "commit's objects with one pickler whose memo, once grown by the "
            "list's N references, costs every later object O(N) to clear: the "
            "list's cost per object grows with the transaction, the BTree's "
            "stays flat.  "
            "Each trial runs on a fresh database holding the small data set; "
            "the objects committed are new ProcessSteps ordering its "
            "capabilities; only the commit is timed."
        )
        + "\n\nvariants:\n"
        + variants,
    )
    p.add_argument(
        "--storage",
        type=storage_list,
        action="append",
        metavar="NAMES",
        help=f"comma-separated storages, repeatable (default: "
        f"{','.join(DEFAULT_STORAGES)})",
    )
    p.add_argument(
        "--objects",
        type=objects_list,
        metavar="N,N,...",
        default=DEFAULT_OBJECTS,
        help="objects per transaction (default: "
        f"{','.join(str(n) for n in DEFAULT_OBJECTS)}; 10k = 10000)",
    )
    p.add_argument(
        "--variant",
        default=",".join(VARIANTS),
        metavar="NAMES",
        help=f"comma-separated variants (default: {','.join(VARIANTS)})",
    )
    add_trial_options(
        p, "per point", "trials per storage and variant, at the smallest size first"
    )
    add_data_set_options(p, sizes=False)
    add_output_options(
        p,
        json="write raw samples as JSON",
        plot="draw cost per object against objects per transaction (.svg or .png)",
    )
    add_progress_option(p)
    storages.add_storage_options(p)
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    from scenarios.sweep import kind, runner
    from scenarios.sweep.config import DEFAULT_STORAGES, SweepConfig

    options = storages.options_from_args(args)
    names, explicit = storage_columns(args, options, DEFAULT_STORAGES)
    repeat, warmups = trials(args)
    config = SweepConfig(
        storages=names,
        objects=tuple(args.objects),
        variants=tuple(v.strip() for v in args.variant.split(",") if v.strip()),
        repeat=repeat,
        warmups=warmups,
        seed=args.seed,
        options=options,
    )
    check_storages_usable(config.storages, config.options, explicit=explicit)
    check_outputs(args)
    with progress(args, "sweep") as shown:
        result = runner.run(config, shown)
    return emit(args, kind.view(result))
