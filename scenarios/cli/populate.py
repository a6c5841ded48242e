"""vfab-bench populate: write a data set into a directory and keep it."""

from __future__ import annotations

import argparse
import sys

from scenarios import argtypes
from scenarios.cli.args import (
    add_data_set_options,
    add_progress_option,
    add_recover_option,
    data_set_scale,
    progress,
)
from scenarios.data import datadir
from scenarios.data.datadir import MARKER, path_storages
from scenarios.errors import EXIT_OK
from vfab.generate import DataSpec


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "populate",
        help="write a data set into a directory and keep it",
        description="Write the data set of --size (or --scale) and --seed into "
        "the directory --path with --storage, and keep it there for census, "
        "serve or load tests.  The directory must be new or empty; a data "
        f"set populate wrote before (it leaves {MARKER} beside it) is "
        "replaced only with --overwrite, and only the files its storage "
        "created are removed.",
    )
    p.add_argument(
        "--storage",
        default="file",
        metavar="NAME",
        help="a storage that keeps a database in a directory (default: file; "
        f"choices: {', '.join(path_storages())})",
    )
    p.add_argument(
        "--path",
        type=argtypes.path,
        required=True,
        metavar="DIR",
        help="directory for the database (created if missing; its parent must exist)",
    )
    add_data_set_options(p)
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace a data set of the same storage that populate wrote there",
    )
    add_recover_option(p)
    add_progress_option(p)
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:

    path = args.path.absolute()
    spec = DataSpec.for_scale(data_set_scale(args, path))
    # Bad input: before any work.
    replaced = datadir.plan(args.storage, path, args.overwrite)
    checked = False
    if replaced and args.recover:
        dropped = datadir.check_data_set(args.storage, path, recover=True)
        if dropped is not None:
            print(f"vfab-bench populate: {dropped}", file=sys.stderr)
        checked = True
    with progress(args, "populate") as shown:
        marker = datadir.populate(
            args.storage,
            path,
            spec,
            args.seed,
            args.overwrite,
            progress=shown,
            checked=checked,
        )
    objects = marker.get("objects")
    print(
        f"{path}: {spec.name} data set (seed {args.seed}) with {args.storage}, "
        f"{objects if objects is not None else '?'} objects, "
        f"{marker['size_bytes']:,} bytes, {marker['seconds']:.2f} s"
    )
    return EXIT_OK
