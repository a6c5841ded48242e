"""vfab-bench sweep: commit cost per object against objects per transaction."""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from pathlib import Path

from scenarios.cli.args import (
    add_storage_options,
    check_output,
    check_storages_usable,
    non_negative_int,
    positive_int,
    storage_list,
    storage_options,
    write_output,
)
from scenarios.errors import ConfigError
from vfab.generate import DEFAULT_SEED

#: preset name -> (repeat, warmups)
PRESETS = {"quick": (1, 0), "rigorous": (10, 2)}


def objects_list(text: str) -> tuple[int, ...]:
    from scenarios.sweep.sweep import parse_objects

    try:
        return parse_objects(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    from scenarios.sweep.sweep import DEFAULT_OBJECTS, DEFAULT_STORAGES, VARIANTS

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
    p.add_argument(
        "--repeat",
        type=positive_int,
        metavar="N",
        help="timed trials per point, each on a fresh database (default: 3)",
    )
    p.add_argument(
        "--warmups",
        type=non_negative_int,
        metavar="N",
        help="untimed trials per storage and variant at the smallest size "
        "first (default: 1)",
    )
    p.add_argument(
        "--preset",
        choices=list(PRESETS),
        help="quick: 1 trial, no warmup; rigorous: 10 trials, 2 warmups",
    )
    p.add_argument(
        "--seed",
        type=int,
        default=DEFAULT_SEED,
        help=f"data generator seed (default: {DEFAULT_SEED})",
    )
    p.add_argument(
        "--json", type=Path, metavar="FILE", help="write raw samples as JSON"
    )
    p.add_argument(
        "--plot",
        type=Path,
        metavar="FILE.png",
        help="plot cost per object against objects per transaction (needs "
        "matplotlib: the 'plot' extra)",
    )
    p.add_argument(
        "--force", action="store_true", help="replace existing --json/--plot files"
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    add_storage_options(p)
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    from scenarios.sweep import sweep

    names = [n for group in args.storage for n in group] if args.storage else None
    repeat, warmups = PRESETS.get(args.preset, (3, 1))
    config = sweep.SweepConfig(
        storages=tuple(names) if names else sweep.DEFAULT_STORAGES,
        objects=tuple(args.objects),
        variants=tuple(v.strip() for v in args.variant.split(",") if v.strip()),
        repeat=args.repeat if args.repeat is not None else repeat,
        warmups=args.warmups if args.warmups is not None else warmups,
        seed=args.seed,
        options=storage_options(args),
    )
    check_storages_usable(config.storages, config.options, explicit=bool(names))
    check_output(args.json, args.force)
    check_output(args.plot, args.force)
    if args.plot is not None:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise ConfigError(
                "--plot needs matplotlib: install the 'plot' extra"
            ) from None

    progress = None if args.quiet else (lambda line: print(line, file=sys.stderr))
    result = sweep.run(config, progress)
    print(sweep.text(result), end="")
    if args.json is not None:
        write_output(
            args.json, json.dumps(result.to_json(), indent=1) + "\n", args.force
        )
    if args.plot is not None:
        sweep.plot(result, args.plot)
    return 0
