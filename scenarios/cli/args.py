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
from storages import StorageOptions
from storages.options import at_least
from storages.zeo import ZEOOptions

EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130


class Parser(argparse.ArgumentParser):
    """argparse that reports a usage error as one line, exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")


positive_int = at_least(1)
non_negative_int = at_least(0)


def storage_list(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    for name in names:
        if name not in storages.REGISTRY:
            raise argparse.ArgumentTypeError(storages.unknown_storage(name))
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
    """Every registered storage's options (each storage module declares its
    own: see storages.base.OptionGroup)."""
    storages.add_storage_options(p)


def storage_options(args: argparse.Namespace) -> StorageOptions:
    return storages.options_from_args(args)


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
    address = options.get(ZEOOptions).zeo_address
    uses_zeo = (ZEOOptions in storages.REGISTRY[n].option_groups for n in names)
    if address is not None and any(uses_zeo):
        from storages.zeo import check_reachable

        check_reachable(address)


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
