"""vfab-bench report: the tables of a saved file (run, sweep, scale,
counts), or its page (--html); what a kind shows and which options it takes
is its Kind's (scenarios.registry)."""

from __future__ import annotations

import argparse

from scenarios import argtypes
from scenarios.cli.outputs import add_output_options, check_outputs, emit
from scenarios.errors import ConfigError
from scenarios.results import significance


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "report",
        help="print the tables of a saved --json file (run, sweep, scale, counts)",
    )
    p.add_argument("file", type=argtypes.path)
    p.add_argument(
        "--all",
        action="store_true",
        help="a run file: every table (default: the 2000 rows and what else "
        "was measured)",
    )
    p.add_argument(
        "--markdown", action="store_true", help="print every table as Markdown"
    )
    p.add_argument(
        "--statistic",
        choices=list(significance.STATISTICS),
        help="what a time cell shows (default: the statistic the file records, "
        f"run --statistic; {significance.DEFAULT_STATISTIC} for files that "
        "record none)",
    )
    p.add_argument(
        "--sweep",
        type=argtypes.path,
        metavar="SWEEP.json",
        help="with --html and a run file: add the cost curve of a `sweep --json` file",
    )
    p.add_argument(
        "--scale",
        type=argtypes.path,
        metavar="SCALE.json",
        help="with --html and a run file: add the curves of a `scale --json` file",
    )
    p.add_argument(
        "--cost-model",
        type=argtypes.path,
        metavar="OTHER.json",
        help="a count file (run --counts --json) for a time file, or a time "
        "file for a count file: print nanoseconds per instruction per phase, "
        "which phases compute and which wait for I/O or the network",
    )
    add_output_options(
        p,
        html="also write a self-contained HTML page: tables, charts, metadata",
        pyperf="a run file: also write its trials as a pyperf JSON suite",
    )
    p.set_defaults(handler=main)


#: report's options a kind may not take (Kind.report_options says which it
#: does).
OPTIONS = ("all", "markdown", "statistic", "sweep", "scale")


def main(args: argparse.Namespace) -> int:
    from scenarios import registry

    extras = [o for o in ("sweep", "scale") if getattr(args, o) is not None]
    if extras and args.html is None:
        raise ConfigError(f"--{extras[0]} needs --html")
    kind, result = registry.read(args.file, "report")
    if args.cost_model is not None:
        return _cost_model(args, result)
    for name in (*OPTIONS, *args.outputs):
        if getattr(args, name) not in (None, False) and name not in (
            kind.report_options
        ):
            option = "--" + name.replace("_", "-")
            raise ConfigError(f"{option} does not apply to {kind.plural}")
    check_outputs(args)
    assert kind.report is not None  # registry.read checked it
    return emit(args, kind.report(result, args))


def _cost_model(args: argparse.Namespace, result: object) -> int:
    """report FILE --cost-model OTHER: a time file and a count file."""
    from scenarios import registry
    from scenarios.counts.kind import cost_model

    for name in args.outputs:
        if getattr(args, name) is not None:
            raise ConfigError(f"--{name} does not go with --cost-model")
    _, other = registry.read(args.cost_model, "report")
    return emit(args, cost_model(result, other, args.markdown))
