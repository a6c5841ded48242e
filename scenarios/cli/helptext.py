"""--help that fits a screen: each command's examples, and the options every
storage declares and the mix's weights listed once, in `vfab-bench help
storages` and `help mix`.
"""

from __future__ import annotations

import argparse
import sys
import textwrap

import storages
from scenarios.errors import EXIT_OK

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
    "history": (
        "vfab-bench history runs/",
        "vfab-bench history rel-6.2 rel-6.3 rel-6.4      # release directories",
        "vfab-bench history runs/ --by ZEO --html history.html",
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
        "vfab-bench matrix --storage zeo,relstorage-pg --kind processes "
        "--concurrency 1,10",
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
        "vfab-bench scale --storage zeo,relstorage-sqlite --clients 1,2,4 "
        "--json s.json",
        "vfab-bench scale --fault kill-server:3,restart:1 --clients 4",
        "vfab-bench scale --concurrency greenlets --clients 200 "
        "--clients-per-process 50",
        "vfab-bench scale --workers 2 --master-bind-host 10.0.0.1 --clients 1,2,4",
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
    "help": ("vfab-bench help storages", "vfab-bench help mix"),
}

TOPICS = {
    "storages": "the storage options every command that opens storages takes",
    "mix": "the operation mix's weights (scale, zeoloop, verify)",
    "phases": "the phases of run, in the order of the report's rows",
}


def storage_dests() -> set[str]:
    """The destinations of every storage option (storages' own groups)."""
    p = argparse.ArgumentParser(add_help=False)
    storages.add_storage_options(p)
    return {a.dest for a in p._actions}


def is_mix(action: argparse.Action) -> bool:
    return action.dest.startswith("weight_")


def _refill(text: str) -> str:
    """Paragraphs refilled to 79 columns; indented lines (lists) kept."""
    out = []
    for paragraph in text.split("\n\n"):
        if any(line.startswith("  ") for line in paragraph.splitlines()):
            out.append(paragraph)
        else:
            out.append(textwrap.fill(" ".join(paragraph.split()), 79))
    return "\n\n".join(out)


def finish(name: str, parser: argparse.ArgumentParser, storage: set[str]) -> None:
    """List *parser*'s storage options and mix weights elsewhere, and end
    its help with its examples and where those options are."""
    hidden = []
    # Only where the whole set was added (census's own --storage-config
    # names the database it reads, and stays).
    has_storages = storage <= {a.dest for a in parser._actions}
    for action in parser._actions:
        if has_storages and action.dest in storage and action.option_strings:
            action.help = argparse.SUPPRESS
            hidden.append("storages")
        elif is_mix(action):
            action.help = argparse.SUPPRESS
            hidden.append("mix")
    lines = []
    examples = EXAMPLES.get(name, ())
    if examples:
        lines += ["examples:", *(f"  {e}" for e in examples)]
    if "storages" in hidden:
        lines += [
            "",
            "storage options (--storage-config, --storage-uri, --cache-size,",
            "--zeo-address, ...): vfab-bench help storages",
        ]
    if "mix" in hidden:
        lines.append("operation mix (--weight-NAME W): vfab-bench help mix")
    if parser.description:
        parser.description = _refill(parser.description)
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
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
    from scenarios.cli.args import show_bounds, show_defaults

    p = argparse.ArgumentParser(
        prog="vfab-bench",
        usage=argparse.SUPPRESS,
        add_help=False,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    if topic == "storages":
        p.description = _refill(
            "The storage options of run, sweep, scale, verify, serve and "
            "release (each storage declares its own; `vfab-bench storages` "
            "lists the storages and whether each can run here).  "
            "--storage-config and --storage-uri add columns for databases "
            "the suite did not create."
        )
        storages.add_storage_options(p)
    else:
        from scenarios.cli.args import add_mix_options

        p.description = _refill(
            "The operation mix of scale, zeoloop and verify: each "
            "operation's weight (how often a user picks it).  The other "
            "mix options (--skew, --retries, --backoff-ms) are in each "
            "command's help."
        )
        add_mix_options(p, weights_only=True)
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
    from scenarios.errors import ConfigError

    # The whole parser, set by scenarios.cli.build_parser (importing it
    # here would be an import cycle).
    parser: argparse.ArgumentParser = args.parser
    topic = args.topic
    if topic is None:
        parser.print_help()
        return EXIT_OK
    if topic in ("storages", "mix"):
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
