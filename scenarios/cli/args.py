"""Option groups shared by every subcommand that takes them, and the parser.

Groups: the data set (--size/--scale/--seed), trials and presets
(--repeat/--warmups/--preset), outputs (--json/--markdown/--plot with
--force, and their checks), storages (--zeo-address, caches, bdb).  Value
types (scenarios.argtypes) raise argparse.ArgumentTypeError, which Parser
turns into one line on stderr and exit status EXIT_BAD_INPUT.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import storages
from scenarios.argtypes import non_negative_int, positive_int
from scenarios.errors import EXIT_BAD_INPUT, ConfigError
from storages import StorageOptions
from storages.zeo import ZEOOptions

#: --preset name -> (repeat, warmups); without one, DEFAULT_TRIALS.
PRESETS = {"quick": (1, 0), "rigorous": (10, 2)}
DEFAULT_TRIALS = (3, 1)


class Parser(argparse.ArgumentParser):
    """argparse that reports a usage error as one line, exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")


def storage_list(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    for name in names:
        if name not in storages.REGISTRY:
            raise argparse.ArgumentTypeError(storages.unknown_storage(name))
    return names


def add_data_set_options(p: argparse.ArgumentParser, sizes: bool = True) -> None:
    """--size or --scale (unless not *sizes*: a command whose data set has one
    size), and --seed: which data set a command builds."""
    from vfab.generate import DEFAULT_SEED, SIZES

    if sizes:
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


def add_trial_options(p: argparse.ArgumentParser, what: str, warmups: str) -> None:
    """--repeat, --warmups and --preset: how many trials of *what*, and the
    untimed *warmups* before them; trials() reads them."""
    repeat, warmup = DEFAULT_TRIALS
    g = p.add_argument_group("trials")
    g.add_argument(
        "--repeat",
        type=positive_int,
        metavar="N",
        help=f"timed trials {what}, each on a fresh database (default: {repeat})",
    )
    g.add_argument(
        "--warmups",
        type=non_negative_int,
        metavar="N",
        help=f"untimed trials {warmups} (default: {warmup})",
    )
    presets = "; ".join(
        f"{name}: {r} trial(s), {w} warmup(s)" for name, (r, w) in PRESETS.items()
    )
    g.add_argument(
        "--preset",
        choices=list(PRESETS),
        help=f"{presets} (--repeat/--warmups override)",
    )


def trials(args: argparse.Namespace) -> tuple[int, int]:
    """(repeat, warmups): the preset's, or the defaults, unless given."""
    repeat, warmups = PRESETS.get(args.preset, DEFAULT_TRIALS)
    return (
        args.repeat if args.repeat is not None else repeat,
        args.warmups if args.warmups is not None else warmups,
    )


def add_output_options(p: argparse.ArgumentParser, **outputs: str) -> None:
    """One --NAME FILE per keyword (its help), and --force; check_outputs()
    refuses them before any work, write_output() writes them."""
    g = p.add_argument_group("outputs")
    for name, help in outputs.items():
        g.add_argument(f"--{name}", type=Path, metavar="FILE", help=help)
    flags = "/".join(f"--{name}" for name in outputs)
    g.add_argument("--force", action="store_true", help=f"replace existing {flags}")
    p.set_defaults(outputs=tuple(outputs))


def check_outputs(args: argparse.Namespace) -> None:
    """check_output for every output add_output_options declared."""
    for name in args.outputs:
        check_output(getattr(args, name), args.force)


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
    must answer, like every server or port named for a storage (its
    preflight())."""
    for name in names:
        factory = storages.get(name, options)
        reason = factory.unavailable()
        if reason is not None and explicit:
            raise ConfigError(f"storage {name!r} is not available: {reason}")
        if reason is None:
            factory.preflight()
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


def write_json(path: Path, data: Any, force: bool) -> None:
    """*data* as the JSON every command writes (indented, one final newline)."""
    write_output(path, json.dumps(data, indent=1) + "\n", force)


def add_progress_option(p: argparse.ArgumentParser) -> None:
    """-q/--quiet: no progress lines on stderr (progress() reads it)."""
    p.add_argument(
        "-q", "--quiet", action="store_true", help="no progress lines on stderr"
    )


def progress(args: argparse.Namespace) -> Callable[[str], None] | None:
    """Where progress lines go: stderr, or nowhere with --quiet."""
    return None if args.quiet else (lambda line: print(line, file=sys.stderr))


def selected_storages(args: argparse.Namespace) -> list[str] | None:
    """The storages every --storage named, in order, or None if none was."""
    return [n for group in args.storage for n in group] if args.storage else None


def write_output(path: Path, text: str, force: bool) -> None:
    with open(path, "w" if force else "x", encoding="utf-8") as f:
        f.write(text)
