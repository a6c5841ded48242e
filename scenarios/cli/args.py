"""Argument types and option groups shared by the subcommands.

Validators raise argparse.ArgumentTypeError, which Parser turns into one
line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import NoReturn

import storages
from scenarios.errors import ConfigError
from storages import StorageError, StorageOptions
from storages.zeo import parse_address

EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130


class Parser(argparse.ArgumentParser):
    """argparse that reports a usage error as one line, exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")


def at_least(minimum: int):  # type: ignore[no-untyped-def]
    """An argparse type: a whole number >= *minimum*."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, not {value}")
        return value

    return parse


positive_int = at_least(1)
non_negative_int = at_least(0)


def port_number(text: str) -> int:
    value = non_negative_int(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"not a port number: {value}")
    return value


def address(text: str) -> tuple[str, int]:
    try:
        return parse_address(text)
    except StorageError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def storage_list(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    for name in names:
        if name not in storages.REGISTRY:
            raise argparse.ArgumentTypeError(
                f"unknown storage {name!r}; choose from {', '.join(storages.REGISTRY)}"
            )
    return names


def add_data_set_options(p: argparse.ArgumentParser) -> None:
    """--size or --scale, and --seed: which data set a command builds."""
    from vfab.generate import DEFAULT_SEED, SIZES

    p.add_argument(
        "--size",
        choices=list(SIZES),
        default=None,
        help="data set size (default: small, the 2000 data set); "
        + ", ".join(f"{k} = {v}x" for k, v in SIZES.items()),
    )
    p.add_argument(
        "--scale",
        type=positive_int,
        metavar="N",
        help="any multiple of the small data set instead of --size",
    )
    p.add_argument(
        "--seed",
        type=int,
        default=DEFAULT_SEED,
        help=f"data generator seed (default: {DEFAULT_SEED})",
    )


def add_storage_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("storage options")
    g.add_argument(
        "--zeo-address",
        type=address,
        metavar="HOST:PORT",
        help="use this running ZEO server instead of starting runzeo; "
        f"the suite writes only under root[{storages.ROOT_KEY!r}]",
    )
    g.add_argument(
        "--zeo-port",
        type=port_number,
        default=0,
        metavar="N",
        help="port for the runzeo the suite starts on 127.0.0.1 (default: a free port)",
    )
    g.add_argument(
        "--cache-size",
        type=positive_int,
        metavar="OBJECTS",
        help="ZODB connection cache size in objects (default: ZODB's, 400; "
        "run: a million for xlarge)",
    )
    g.add_argument(
        "--zeo-cache-size",
        type=positive_int,
        metavar="BYTES",
        help="ZEO client cache size in bytes (default: ZEO's, 20 MB)",
    )
    g.add_argument(
        "--bdb-cache-size",
        type=positive_int,
        metavar="BYTES",
        help="Berkeley DB page cache in bytes (default: 64 MiB)",
    )
    g.add_argument(
        "--bdb-durability",
        choices=("sync", "write-nosync"),
        default="sync",
        help="sync: a commit survives an OS crash (default); write-nosync: "
        "it survives a process crash only",
    )


def storage_options(args: argparse.Namespace) -> StorageOptions:
    return StorageOptions(
        zeo_address=args.zeo_address,
        zeo_port=args.zeo_port,
        cache_size=args.cache_size,
        zeo_cache_size=args.zeo_cache_size,
        bdb_cache_size=args.bdb_cache_size,
        bdb_durability=args.bdb_durability,
    )


def check_storages_usable(
    names: tuple[str, ...], options: StorageOptions, explicit: bool
) -> None:
    """Before a run: a storage the user named must be able to run here (a
    default one that cannot is skipped by the runner), and a --zeo-address
    must answer."""
    for name in names:
        reason = storages.get(name, options).unavailable()
        if reason is not None and explicit:
            raise ConfigError(f"storage {name!r} is not available: {reason}")
    if options.zeo_address is not None and any(n.startswith("zeo") for n in names):
        from storages.zeo import check_reachable

        check_reachable(options.zeo_address)


def check_output(path: Path | None, force: bool) -> None:
    """Refuse, before the run, an output we could not or should not write."""
    if path is None:
        return
    if path.exists() and not force:
        raise ConfigError(f"{path} exists; use --force to replace it")
    if path.is_dir():
        raise ConfigError(f"{path} is a directory")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise ConfigError(f"directory {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise ConfigError(f"directory {parent} is not writable")


def write_output(path: Path, text: str, force: bool) -> None:
    with open(path, "w" if force else "x", encoding="utf-8") as f:
        f.write(text)
