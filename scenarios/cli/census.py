"""vfab-bench census: per class, what a ZODB database holds."""

from __future__ import annotations

import argparse
import sys
import textwrap

from scenarios import argtypes
from scenarios.cli.outputs import add_output_options, check_outputs, emit
from scenarios.data.datadir import path_storages, read_marker
from scenarios.errors import ConfigError
from storages.zeo import add_zeo_address_option


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "census",
        help="count a database's objects and pickle bytes per class",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=textwrap.fill(
            "Walk a ZODB database from its root and print, per class, "
            "the current objects, their pickle bytes (total, average, share of the "
            "whole of the bytes), and where the storage iterates its revisions "
            "(all, old); "
            "then the revisions' totals and the size on disk.  Classes are read "
            "from the pickles, never imported, so any ZODB database works.  "
            "Opened read-only where the storage allows."
        )
        + "\n\n"
        "give exactly one of:\n"
        "  URI                      a zodburi URI: file:///abs/Data.fs, "
        "zeo://HOST:PORT\n"
        "  --path P [--storage S]   a database in a directory (file: also "
        "the .fs file)\n"
        "  --zeo-address HOST:PORT  a running ZEO server\n"
        "  --storage-config FILE    a ZConfig file (--database NAME picks "
        "<zodb NAME>)",
    )
    p.add_argument("uri", nargs="?", help="a zodburi URI")
    p.add_argument(
        "--path", type=argtypes.path, metavar="P", help="database directory or file"
    )
    p.add_argument(
        "--storage",
        default=None,
        metavar="NAME",
        help="storage at --path (default: the one populate recorded there, "
        "else file; choices: "
        f"{', '.join(path_storages())})",
    )
    add_zeo_address_option(
        p, help="take the census of a running ZEO server (read-only client)"
    )
    p.add_argument(
        "--storage-config",
        type=argtypes.path,
        metavar="FILE",
        help="take the census of the database a ZConfig file's <zodb> section "
        "names (read-only wherever the storage has a read-only mode)",
    )
    p.add_argument(
        "--database",
        metavar="NAME",
        help="the <zodb NAME> section of --storage-config (needed when it has several)",
    )
    p.add_argument(
        "--no-revisions",
        "--no-history",
        action="store_true",
        help="skip reading every revision (faster on many transactions)",
    )
    add_output_options(p, json="write the census as JSON")
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    from scenarios.census import kind, runner, sources

    if args.storage is not None and args.path is None:
        raise ConfigError("--storage goes with --path")
    if args.database is not None and args.storage_config is None:
        raise ConfigError("--database goes with --storage-config")
    given = [
        args.uri is not None,
        args.path is not None,
        args.zeo_address is not None,
        args.storage_config is not None,
    ]
    if sum(given) != 1:
        raise ConfigError(
            "give exactly one of a URI, --path, --zeo-address or --storage-config"
        )
    check_outputs(args)

    if args.path is not None:
        path = args.path.absolute()
        # Without --storage: the storage populate recorded there, else file.
        marker = read_marker(path) if path.is_dir() else None
        name = args.storage or (marker or {}).get("storage", "file")
        source = sources.open_path(name, path)
    elif args.zeo_address is not None:
        source = sources.open_zeo(args.zeo_address)
    elif args.storage_config is not None:
        source = sources.open_config(args.storage_config, args.database)
    else:
        source = sources.open_uri(args.uri)
    try:
        if source.warning:
            print(f"vfab-bench: warning: {source.warning}", file=sys.stderr)
        result = runner.take(
            source.storage,
            source.name,
            source.directory,
            revisions=not args.no_revisions,
            warning=source.warning,
        )
    finally:
        source.close()
    return emit(args, kind.view(result))
