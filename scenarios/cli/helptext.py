"""--help that fits a screen: each command's examples, and the options every
storage declares and the mix's weights listed once, in `vfab-bench help
storages` and `help mix`.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import textwrap

import storages
from scenarios.cli.args import add_mix_options, show_bounds, show_defaults
from scenarios.errors import EXIT_OK, ConfigError

#: Two or three examples per command, in the order of the help's list.
EXAMPLES: dict[str, tuple[str, ...]] = {
    "run": (
        "vfab-bench run                                   # the 2000 table",
        "vfab-bench run --storage file,zeo --json r.json --html r.html",
        "vfab-bench run --counts --storage file --json counts.json",
    ),
    "report": (
        "vfab-bench report r.json                         # the short view",
        "vfab-bench report r.json --all                   # every table",
        "vfab-bench report r.json --html r.html",
    ),
    "compare": (
        "vfab-bench compare old.json new.json --fail-above 10%",
        "vfab-bench compare r.json --baseline file",
        "vfab-bench compare results/release-6.3 results/release-6.4",
    ),
    "trend": (
        "vfab-bench trend runs/",
        "vfab-bench trend rel-6.2 rel-6.3 rel-6.4        # release directories",
        "vfab-bench trend runs/ --by ZEO --html trend.html",
    ),
    "storages": ("vfab-bench storages",),
    "populate": (
        "vfab-bench populate --storage file --path data --size medium",
        "vfab-bench populate --storage bdb --path data --overwrite",
    ),
    "census": (
        "vfab-bench census --path data/Data.fs",
        "vfab-bench census zeo://127.0.0.1:8100 --json census.json",
    ),
    "matrix": (
        "vfab-bench matrix --quick",
        "vfab-bench matrix --json m.json --html m.html",
        "vfab-bench matrix --storage zeo --kind processes --concurrency 1,10",
    ),
    "ab": (
        "vfab-bench ab .venv 'ZODB==6.2'                 # this env against 6.2",
        "vfab-bench ab 'ZEO==6.1' ~/src/ZEO --storage zeo --mode duet",
        "vfab-bench ab results/release-6.3 .venv --quick --json ab.json",
    ),
    "sweep": (
        "vfab-bench sweep",
        "vfab-bench sweep --storage file --objects 1000,10000 --json s.json",
    ),
    "serve": (
        "vfab-bench serve --path data --size medium",
        "vfab-bench serve --storage relstorage-pg --path data --port 8100",
    ),
    "zeoloop": (
        "vfab-bench zeoloop --zeo-address 127.0.0.1:8100 --users 4",
        "vfab-bench zeoloop --target zeo.conf --processes 2 --duration 30",
    ),
    "scale": (
        "vfab-bench scale                                 # zeo, 1 to 16 clients",
        "vfab-bench scale --storage zeo,relstorage-sqlite --json s.json",
        "vfab-bench scale --fault kill-server:3,restart:1 --clients 4",
    ),
    "worker": ("vfab-bench worker --master-host 10.0.0.1",),
    "verify": (
        "vfab-bench verify",
        "vfab-bench verify --storage relstorage-sqlite --json v.json",
    ),
    "status": ("vfab-bench status --zeo-address 127.0.0.1:8100",),
    "release": (
        "vfab-bench release --out results/release-6.4",
        "vfab-bench release --out results/release-6.5 --against results/release-6.4",
        "vfab-bench release --quick --storage file --out /tmp/release-check",
    ),
    "help": ("vfab-bench help storages", "vfab-bench help verify"),
}

#: The widest a help line may be, whatever the terminal's width: argparse
#: fills to the terminal, and a help read in a log, an issue or an 80-column
#: window should not depend on the one it was printed in.
HELP_WIDTH = 79


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """argparse's formatter (descriptions kept as refill made them), no
    wider than HELP_WIDTH nor the terminal."""

    def __init__(
        self,
        prog: str,
        indent_increment: int = 2,
        max_help_position: int = 24,
        width: int | None = None,
    ) -> None:
        if width is None:
            width = shutil.get_terminal_size().columns - 2
        super().__init__(
            prog, indent_increment, max_help_position, min(width, HELP_WIDTH)
        )

    def _split_lines(self, text: str, width: int) -> list[str]:
        # A name with a hyphen (relstorage-mysql-hp) stays whole.
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)


TOPICS = {
    "storages": "the storage options every command that opens storages takes",
    "mix": "the operation mix: weights, skew, retries (scale, zeoloop, verify)",
    "clients": "how scale's clients run, and on which hosts (--workers)",
    "phases": "the phases of run, in the order of the report's rows",
}

#: The groups of options a command's --help leaves to a topic, by the
#: start of the group's title (only where the command has the group).
TOPIC_GROUPS = {
    "clients": ("how the clients run", "several hosts"),
}


def storage_dests() -> set[str]:
    """The destinations of every storage option (storages' own groups)."""
    p = argparse.ArgumentParser(add_help=False)
    storages.add_storage_options(p)
    return {a.dest for a in p._actions}


def mix_dests() -> set[str]:
    """The destinations of the operation mix's options (weights, skew,
    retries, backoff), listed once in `help mix`."""

    p = argparse.ArgumentParser(add_help=False)
    add_mix_options(p)
    return {a.dest for a in p._actions}


def refill(text: str) -> str:
    """Paragraphs refilled to 79 columns; indented lines (lists) kept."""
    out = []
    for paragraph in text.split("\n\n"):
        if any(line.startswith("  ") for line in paragraph.splitlines()):
            out.append(paragraph)
        else:
            out.append(textwrap.fill(" ".join(paragraph.split()), 79))
    return "\n\n".join(out)


def _hide_groups(parser: argparse.ArgumentParser) -> list[str]:
    """Take TOPIC_GROUPS' groups off *parser*'s help; the topics hidden."""
    hidden = []
    for topic, starts in TOPIC_GROUPS.items():
        for group in list(parser._action_groups):
            if group.title and group.title.startswith(starts):
                for action in group._group_actions:
                    action.help = argparse.SUPPRESS
                parser._action_groups.remove(group)
                hidden.append(topic)
    return hidden


def finish(
    name: str,
    parser: argparse.ArgumentParser,
    storage: set[str],
    mix: set[str] | None = None,
) -> None:
    """List *parser*'s storage options, mix and client options elsewhere
    (only where it has the whole set: census's own --storage-config names
    the database it reads, verify's own --skew has its own default), and
    end its help with its examples and where those options are."""
    if mix is None:
        mix = mix_dests()
    dests = {a.dest for a in parser._actions}
    hidden = _hide_groups(parser)
    for topic, whole in (("storages", storage), ("mix", mix)):
        if not whole <= dests:
            continue
        for action in parser._actions:
            if action.dest in whole and action.option_strings:
                action.help = argparse.SUPPRESS
        for group in list(parser._action_groups):
            if group._group_actions and all(
                a.help == argparse.SUPPRESS for a in group._group_actions
            ):
                parser._action_groups.remove(group)
        hidden.append(topic)
    lines = []
    examples = EXAMPLES.get(name, ())
    if examples:
        lines += ["examples:", *(f"  {e}" for e in examples)]
    where = {
        "storages": "storage options (--storage-config, --storage-uri, "
        "--cache-size, --zeo-address, ...)",
        "mix": "operation mix (--weight-NAME, --skew, --retries, --backoff-ms)",
        "clients": "how the clients run (--concurrency, --clients-per-process) "
        "and on which hosts (--workers, --master-bind-host, ...)",
    }
    told = [
        f"{where[topic]}: vfab-bench help {topic}" for topic in where if topic in hidden
    ]
    if told:
        lines += ["", *(textwrap.fill(t, 79, subsequent_indent="  ") for t in told)]
    if parser.description:
        parser.description = refill(parser.description)
    parser.formatter_class = HelpFormatter
    epilog = "\n".join(lines)
    parser.epilog = f"{parser.epilog}\n\n{epilog}" if parser.epilog else epilog


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    topics = "; ".join(f"{k}: {v}" for k, v in TOPICS.items())
    p = sub.add_parser(
        "help",
        help="the options listed once for every command (storages, mix), "
        "the phases, or a command's help",
        description=f"Print a help topic ({topics}), or COMMAND's --help.",
    )
    p.add_argument("topic", nargs="?", metavar="TOPIC_OR_COMMAND")
    p.set_defaults(handler=main)


def topic_parser(topic: str) -> argparse.ArgumentParser:
    """A parser holding only *topic*'s options, for printing them."""

    p = argparse.ArgumentParser(
        prog="vfab-bench",
        usage=argparse.SUPPRESS,
        add_help=False,
        formatter_class=HelpFormatter,
    )
    if topic == "storages":
        p.description = refill(
            "The storage options of run, sweep, scale, verify, serve and "
            "release (each storage declares its own; `vfab-bench storages` "
            "lists the storages and whether each can run here).  "
            "--storage-config and --storage-uri add columns for databases "
            "the suite did not create."
        )
        storages.add_storage_options(p)
    elif topic == "clients":
        from scenarios.scale.options import (
            add_cluster_options,
            add_concurrency_options,
        )

        p.description = refill(
            "How `vfab-bench scale` runs its clients (a process each, or "
            "threads or greenlets sharing a process) and on which hosts "
            "(`vfab-bench worker` hosts, as a locust master: docs/cluster.md)."
        )
        add_concurrency_options(p)
        add_cluster_options(p)
    else:
        p.description = refill(
            "The operation mix of scale, zeoloop and verify: each "
            "operation's weight (how often a user picks it), how the "
            "capabilities are picked (--skew; verify has its own default) "
            "and how a conflict is retried."
        )
        add_mix_options(p)
    show_defaults(p)
    show_bounds(p)
    return p


def phases_text() -> str:
    from scenarios.bench.phases import PHASES

    lines = ["The phases of `vfab-bench run`, in the order of the report's rows:"]
    for phase in PHASES:
        lines += textwrap.wrap(
            f"{phase.name:32} {phase.description}",
            79,
            subsequent_indent=" " * 35,
            initial_indent="  ",
        )
    return "\n".join(lines) + "\n"


def main(args: argparse.Namespace) -> int:

    # The whole parser, set by scenarios.cli.build_parser (importing it
    # here would be an import cycle).
    parser: argparse.ArgumentParser = args.parser
    topic = args.topic
    if topic is None:
        parser.print_help()
        return EXIT_OK
    if topic in ("storages", "mix", "clients"):
        sys.stdout.write(topic_parser(topic).format_help())
        return EXIT_OK
    if topic == "phases":
        sys.stdout.write(phases_text())
        return EXIT_OK
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            if topic in action.choices:
                action.choices[topic].print_help()
                return EXIT_OK
            known = ", ".join([*TOPICS, *action.choices])
            raise ConfigError(f"no help topic {topic!r}; choose from {known}")
    raise AssertionError("no subcommands")
