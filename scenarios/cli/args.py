"""Option groups shared by every subcommand that takes them (data set,
trials and presets, storages, the operation mix, progress), and the
parser that turns a usage error into one line and exit status 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import storages
from scenarios.argtypes import at_least, bounds_text, ranged, seed
from scenarios.bench.config import scale_for
from scenarios.data.estimate import does_not_fit
from scenarios.errors import EXIT_BAD_INPUT, ConfigError
from scenarios.load.options import LOAD_OPTIONS
from scenarios.load.target import normalize
from scenarios.progress import TICK_S, Progress
from scenarios.results.formatter import plural
from scenarios.scale.config import MAX_CLIENTS
from storages import StorageOptions
from storages.options import shown

#: The largest --scale (about 800 GB of memory: does_not_fit() refuses what
#: this machine cannot hold well before it), --repeat and --warmups.
MAX_SCALE = 1_000_000
MAX_TRIALS = 10_000
MAX_WARMUPS = 1_000

#: --preset name -> (repeat, warmups); without one, DEFAULT_TRIALS.
PRESETS = {"quick": (1, 0), "rigorous": (10, 2)}
DEFAULT_TRIALS = (3, 1)


class Parser(argparse.ArgumentParser):
    """argparse that reports a usage error as one line, exit 2; an option
    no parser knows is said by the subcommand it was given to, with the
    options it has that are close, and its *unknown_hint*."""

    #: What to say after an unknown option (a subcommand sets it: verify
    #: names --budget).
    unknown_hint = ""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: Any = None
    ) -> argparse.Namespace:
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            self.chosen(parsed).unrecognized(extras)
        return parsed

    def chosen(self, parsed: argparse.Namespace) -> Parser:
        """The subcommand's parser *parsed* went to (self: none)."""
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                command = getattr(parsed, action.dest or "", None)
                sub = action.choices.get(command) if command else None
                if isinstance(sub, Parser):
                    return sub
        return self

    def unrecognized(self, extras: Sequence[str]) -> NoReturn:
        """The one line for arguments this parser does not take."""
        import difflib

        known = [o for o in self._option_string_actions if o.startswith("--")]
        close: list[str] = []
        for word in extras:
            if word.startswith("--"):
                for match in difflib.get_close_matches(word.partition("=")[0], known):
                    if match not in close:
                        close.append(match)
        said = [f"unrecognized arguments: {' '.join(extras)}"]
        if close:
            said.append(f"did you mean {' or '.join(close[:3])}?")
        if self.unknown_hint:
            said.append(self.unknown_hint)
        said.append(f"`{self.prog} --help` lists its options")
        self.error("; ".join(said))


def show_bounds(parser: argparse.ArgumentParser) -> None:
    """Append its range to the help of every numeric option of *parser* and
    of its subcommands (argtypes.bounds_text), so --help states what
    parsing will refuse."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                show_bounds(sub)
            continue
        text = bounds_text(action.type)
        if text is None or action.help == argparse.SUPPRESS:
            continue
        if action.help and text in action.help:
            continue
        action.help = f"{action.help} ({text})" if action.help else text


def show_defaults(parser: argparse.ArgumentParser) -> None:
    """Append "(default: X)" to the help of every option of *parser* and of
    its subcommands that has a default value its help does not state (flags
    and empty defaults aside), so every --help shows what an option left
    out means; run it before show_bounds, so the range comes last."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                show_defaults(sub)
            continue
        text = default_text(action)
        if text is None or action.help == argparse.SUPPRESS:
            continue
        if action.help and "default" in action.help:
            continue
        action.help = f"{action.help} ({text})" if action.help else text


def default_text(action: argparse.Action) -> str | None:
    """ "default: X" for an option whose default is a value (not a flag's,
    not None, not empty), else None."""
    default = action.default
    if (
        not action.option_strings
        or action.nargs == 0
        or default is None
        or default is argparse.SUPPRESS
        or default in ("", (), [])
    ):
        return None
    if isinstance(default, float):
        shown = f"{default:g}"
    elif isinstance(default, (list, tuple)):
        shown = ",".join(str(v) for v in default)
    else:
        shown = str(default)
    return f"default: {shown}".replace("%", "%%")


def storage_list(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",")]
    if not any(names):
        raise argparse.ArgumentTypeError(f"no storage named in {text!r}")
    if not all(names):
        raise argparse.ArgumentTypeError(f"empty storage name in {text!r}")
    for name in names:
        try:
            storages.factory_class(name)
        except storages.StorageError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
    return names


def add_storage_option(p: argparse.ArgumentParser, default: str) -> None:
    """--storage NAMES, repeatable (selected_storages() reads it)."""
    text = f"comma-separated storages, repeatable (default: {default})"
    p.add_argument("--storage", type=storage_list, action="append", metavar="NAMES",
                   help=text)  # fmt: skip


def add_data_set_options(p: argparse.ArgumentParser, sizes: bool = True) -> None:
    """--size or --scale (unless not *sizes*: a command whose data set has one
    size), and --seed: which data set a command builds."""
    from vfab.generate import DEFAULT_SEED, SIZES

    if sizes:
        p.add_argument(
            "--size",
            choices=list(SIZES),
            default=None,
            metavar="SIZE",
            help="data set: "
            + ", ".join(f"{k} {v}x" for k, v in SIZES.items())
            + " (default: small, the 2000 one)",
        )
        p.add_argument(
            "--scale",
            type=at_least(1, MAX_SCALE),
            metavar="N",
            help="any multiple of small instead of --size",
        )
        p.add_argument(
            "--force-scale",
            action="store_true",
            help="build even where the estimate exceeds this machine's memory or disk",
        )
    p.add_argument(
        "--seed",
        type=seed,
        default=DEFAULT_SEED,
        help=f"data generator seed (default: {DEFAULT_SEED}, everywhere)",
    )


def data_set_scale(args: argparse.Namespace, directory: Path) -> int:
    """The scale --size or --scale asks for, refused (ConfigError, with the
    estimate) when it would not fit in memory or in *directory*'s disk,
    unless --force-scale."""

    scale = scale_for(args.size, args.scale)
    reason = None if args.force_scale else does_not_fit(scale, directory)
    if reason is not None:
        raise ConfigError(f"{reason} (--force-scale to try anyway)")
    return scale


def add_trial_options(
    p: argparse.ArgumentParser,
    what: str,
    warmups: str,
    defaults: tuple[int, int] = DEFAULT_TRIALS,
) -> None:
    """--repeat, --warmups and --preset: how many trials of *what*, and the
    untimed *warmups* before them (*defaults*: (repeat, warmups) as the
    command's help states them); trials() reads them."""
    repeat, warmup = defaults
    g = p.add_argument_group("trials")
    g.add_argument(
        "--repeat",
        type=at_least(1, MAX_TRIALS),
        metavar="N",
        help=f"timed trials {what}, each on a fresh database (default: {repeat})",
    )
    g.add_argument(
        "--warmups",
        type=at_least(0, MAX_WARMUPS),
        metavar="N",
        help=f"untimed warmup {warmups} (default: {warmup})",
    )
    presets = "; ".join(
        f"{name}: {plural(r, 'trial')}, {plural(w, 'warmup')}"
        for name, (r, w) in PRESETS.items()
    )
    g.add_argument(
        "--preset",
        choices=list(PRESETS),
        metavar="NAME",
        help=f"{presets} (--repeat/--warmups override)",
    )


def trials(
    args: argparse.Namespace, defaults: tuple[int, int] = DEFAULT_TRIALS
) -> tuple[int, int]:
    """(repeat, warmups): the preset's, or the command's *defaults*, unless
    given."""
    repeat, warmups = PRESETS.get(args.preset, defaults)
    return (
        args.repeat if args.repeat is not None else repeat,
        args.warmups if args.warmups is not None else warmups,
    )


def check_storages_usable(
    names: tuple[str, ...], options: StorageOptions, explicit: bool
) -> None:
    """Before a run: a storage the user named must be able to run here (a
    default one that cannot is skipped by the runner), every server or
    port named for a storage must answer or be free, and a database the
    user named (--storage-config, --storage-uri) must open read-only (its
    preflight(): a --zeo-address for zeo)."""
    factories = [storages.get(name, options) for name in names]
    for factory in factories:
        reason = factory.unavailable()
        if reason is not None and explicit:
            raise ConfigError(f"storage {factory.name!r} is not available: {reason}")
    for factory in factories:
        if factory.unavailable() is None:
            factory.preflight()


def add_mix_options(p: argparse.ArgumentParser, weights_only: bool = False) -> None:
    """The operation mix's options (scenarios.load.options), in their own
    group: every one, or the weights alone (help mix)."""

    g = p.add_argument_group("operation mix")
    for option in LOAD_OPTIONS:
        if weights_only and not option.flag.startswith("--weight-"):
            continue
        g.add_argument(
            option.flag,
            type=option.checked,
            default=option.default,
            metavar=option.metavar,
            help=option.help,
        )


def add_recover_option(p: argparse.ArgumentParser) -> None:
    """--recover: a database whose only fault is a last transaction a crash
    cut short is recovered (that transaction dropped, its bytes kept beside
    the file) instead of refused."""
    p.add_argument(
        "--recover",
        action="store_true",
        help="if the existing database's only fault is a last transaction a "
        "crash cut (nothing in it was acknowledged), drop that transaction "
        "as its storage would, keeping the bytes beside the file (Data.fs.trN), "
        "and go on; damage anywhere else is still refused",
    )


def add_progress_option(p: argparse.ArgumentParser) -> None:
    """-q/--quiet: no progress on stderr (progress() reads it)."""
    p.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="no progress on stderr",
    )


def progress(args: argparse.Namespace, what: str = "", tick: bool = True) -> Progress:
    """The command's progress (scenarios.progress): a live bar on a
    terminal, plain lines on stderr otherwise, nothing with --quiet; named
    *what* on the bar, redrawn every second unless not *tick* (then on
    events only).  Callable with a line, as a `say` function is; close it
    (a with block) when the command is done."""
    say = None if args.quiet else (lambda line: print(line, file=sys.stderr))
    return Progress(say, what=what, tick_s=TICK_S if tick else None)


def selected_storages(args: argparse.Namespace) -> list[str] | None:
    """The storages every --storage named, in order, or None if none was."""
    return [n for group in args.storage for n in group] if args.storage else None


def storage_columns(
    args: argparse.Namespace, options: StorageOptions, default: tuple[str, ...]
) -> tuple[tuple[str, ...], bool]:
    """(the storages to run, whether the user named them): those --storage
    named, then the columns of --storage-config and --storage-uri; *default*
    when there are none of either."""
    names = selected_storages(args) or []
    names += list(storages.configured_columns(options))
    return (tuple(names), True) if names else (default, False)


# -- the shared storages' commands (scale, verify, choose) ----------------------


def shared_storages() -> list[str]:
    """Registry names of the storages several processes can share."""
    return [name for name, f in storages.REGISTRY.items() if f.shared]


def storage_names(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    valid = shared_storages()
    for name in names:
        if name not in valid:
            raise argparse.ArgumentTypeError(
                storages.unknown_storage(name, valid, what=" shared by processes")
            )
    return names


def client_counts(text: str) -> list[int]:
    try:
        counts = [int(n) for n in text.split(",") if n.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"bad --clients {shown(text)}: expected counts like 1,2,4"
        ) from None
    if not counts or min(counts) < 1 or max(counts) > MAX_CLIENTS:
        raise argparse.ArgumentTypeError(
            f"--clients takes counts from 1 to {MAX_CLIENTS:,}"
        )
    return sorted(set(counts))


ranged(client_counts, 1, MAX_CLIENTS)


def target_of(args: argparse.Namespace) -> str | None:
    """--target as a client spec (None without one); ConfigError beside
    --storage (scale and verify)."""
    target = normalize(args.target) if args.target else None
    if target is not None and args.storage:
        raise ConfigError("give --storage or --target, not both")
    return target


def refuse_unavailable(
    names: tuple[str, ...], options: storages.StorageOptions
) -> None:
    """ConfigError for the first of *names* (registry names; "target" for
    --target) that cannot run here, saying why (scale and verify)."""
    for name in names:
        if name == "target":
            continue
        reason = storages.get(name, options).unavailable()
        if reason is not None:
            raise ConfigError(f"storage {name!r} is not available: {reason}")
