"""vfab-bench: the command line.

Parses arguments into one frozen RunConfig, runs, and reports.  Bad input of
any kind (ConfigError, StorageError, ResultsError, or an argparse error)
becomes one line on stderr and exit status 2 here, at the edge, and
nowhere else; nothing is written before the input has been checked.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

import storages
from scenarios import report
from scenarios.config import ConfigError, RunConfig, scale_for
from scenarios.phases import PHASES
from scenarios.results import ResultsError, RunResult
from storages import StorageError, StorageOptions
from storages.zeo import parse_address
from vfab.generate import DEFAULT_SEED, SIZES

EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130

#: name -> (repeat, warmups)
PRESETS = {"quick": (1, 0), "rigorous": (10, 2)}


class Parser(argparse.ArgumentParser):
    """argparse that reports a usage error as one line, exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {value}")
    return value


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
        help="ZODB connection cache size in objects (default: ZODB's, 400)",
    )
    g.add_argument(
        "--zeo-cache-size",
        type=positive_int,
        metavar="BYTES",
        help="ZEO client cache size in bytes (default: ZEO's, 20 MB)",
    )


def storage_options(args: argparse.Namespace) -> StorageOptions:
    return StorageOptions(
        zeo_address=args.zeo_address,
        zeo_port=args.zeo_port,
        cache_size=args.cache_size,
        zeo_cache_size=args.zeo_cache_size,
    )


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


def build_parser() -> Parser:
    parser = Parser(
        prog="vfab-bench",
        description="Time a virtual-fab workload (create, commit, query) on "
        "ZODB storages; print the MEMS Exchange 2000 table for today's stack.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)

    phases = "\n".join(f"  {p.name:22} {p.description}" for p in PHASES)
    run = sub.add_parser(
        "run",
        help="run the phases on storages and print the table",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run the eight phases of the 2000 table, each trial on a "
        "fresh database, and print wall time, CPU time and objects "
        "loaded/stored per phase and storage.\n\nphases:\n" + phases,
    )
    run.add_argument(
        "--storage",
        type=storage_list,
        action="append",
        metavar="NAMES",
        help="comma-separated storages, repeatable (default: "
        f"{','.join(storages.DEFAULT_STORAGES)}; "
        f"choices: {', '.join(storages.REGISTRY)})",
    )
    run.add_argument(
        "--size",
        choices=list(SIZES),
        default=None,
        help="data set size (default: small, the 2000 data set); "
        + ", ".join(f"{k} = {v}x" for k, v in SIZES.items()),
    )
    run.add_argument(
        "--scale",
        type=positive_int,
        metavar="N",
        help="any multiple of the small data set instead of --size",
    )
    run.add_argument(
        "--repeat",
        type=positive_int,
        metavar="N",
        help="timed trials per storage, each on a fresh database (default: 3)",
    )
    run.add_argument(
        "--warmups",
        type=non_negative_int,
        metavar="N",
        help="untimed trials before them (default: 1)",
    )
    run.add_argument(
        "--preset",
        choices=list(PRESETS),
        help="quick: 1 trial, no warmup; rigorous: 10 trials, 2 "
        "warmups (--repeat/--warmups override)",
    )
    run.add_argument(
        "--seed",
        type=int,
        default=DEFAULT_SEED,
        help=f"data generator seed (default: {DEFAULT_SEED})",
    )
    run.add_argument(
        "--json",
        type=Path,
        metavar="FILE",
        help="write raw samples and metadata as JSON",
    )
    run.add_argument(
        "--markdown", type=Path, metavar="FILE", help="write the tables as Markdown"
    )
    run.add_argument(
        "--force", action="store_true", help="replace existing --json/--markdown files"
    )
    run.add_argument(
        "-q", "--quiet", action="store_true", help="no progress lines on stderr"
    )
    add_storage_options(run)
    run.set_defaults(handler=cmd_run)

    rep = sub.add_parser("report", help="print the tables of a saved --json file")
    rep.add_argument("file", type=Path)
    rep.add_argument("--markdown", action="store_true", help="print Markdown")
    rep.set_defaults(handler=cmd_report)

    lst = sub.add_parser("storages", help="list the registered storages")
    lst.set_defaults(handler=cmd_storages)
    return parser


def cmd_run(args: argparse.Namespace) -> int:
    from scenarios import runner

    names = [n for group in args.storage for n in group] if args.storage else None
    repeat, warmups = PRESETS.get(args.preset, (3, 1))
    config = RunConfig(
        storages=tuple(names) if names else storages.DEFAULT_STORAGES,
        scale=scale_for(args.size, args.scale),
        repeat=args.repeat if args.repeat is not None else repeat,
        warmups=args.warmups if args.warmups is not None else warmups,
        seed=args.seed,
        options=storage_options(args),
    )
    for name in config.storages:
        reason = storages.get(name, config.options).unavailable()
        if reason is not None and names:
            raise ConfigError(f"storage {name!r} is not available: {reason}")
    if config.options.zeo_address is not None and "zeo" in config.storages:
        from storages.zeo import check_reachable

        check_reachable(config.options.zeo_address)
    check_output(args.json, args.force)
    check_output(args.markdown, args.force)

    progress = None if args.quiet else (lambda line: print(line, file=sys.stderr))
    result = runner.run(config, progress)
    print(report.text(result), end="")
    if args.json is not None:
        import json

        write_output(
            args.json, json.dumps(result.to_json(), indent=1) + "\n", args.force
        )
    if args.markdown is not None:
        write_output(args.markdown, report.markdown(result), args.force)
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    result = RunResult.load(args.file)
    print(report.markdown(result) if args.markdown else report.text(result), end="")
    return 0


def cmd_storages(args: argparse.Namespace) -> int:
    for name, factory in storages.REGISTRY.items():
        reason = factory().unavailable()
        note = f" (unavailable: {reason})" if reason else ""
        print(f"{name:10} {factory.description}{note}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_BAD_INPUT
    try:
        return int(args.handler(args))
    except (ConfigError, StorageError, ResultsError) as e:
        print(f"vfab-bench: error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("vfab-bench: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
