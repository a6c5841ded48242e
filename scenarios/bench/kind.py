"""The run as a result kind: what run and report show of a RunResult (the
short view, every table, Markdown, the page, a pyperf suite), and compare."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from scenarios.bench import page, pyperf_suite, report, short
from scenarios.results import compare_runs, files
from scenarios.results.kinds import Kind, View
from scenarios.results.model import RunResult

#: What the text is: the short view, every table, Markdown, or nothing (a
#: page or a pyperf file was asked for: that is the output).
TEXTS = ("short", "all", "markdown", "")


def view(
    run: RunResult,
    stat: str | None = None,
    text: str = "short",
    rest: str = "",
    sections: Sequence[page.Section] = (),
) -> View:
    """*run*'s text (one of TEXTS; *rest*: the short view's last line) and
    its files, time cells by *stat* (None: the statistic the run records);
    the page adds *sections* (bench.page.page)."""
    shown = {
        "short": lambda: short.text(run, stat, rest),
        "all": lambda: report.text(run, stat),
        "markdown": lambda: report.markdown(run, stat),
        "": lambda: "",
    }[text]()
    return View(
        shown,
        {
            "json": run.to_json,
            "markdown": lambda: report.markdown(run, stat),
            "html": lambda: page.page(run, stat, sections),
            "pyperf": lambda: pyperf_suite.text(run),
        },
    )


#: The sections a run's page takes from other kinds' files named on
#: report's command line (report --sweep, --scale), each given the
#: statistic's name: supplied by scenarios.registry, above every command.
Sections = Callable[[Any], Sequence[page.Section]]


def kind(sections: Sections = lambda args: ()) -> Kind:
    """The run file as a result kind, its page extended by *sections*."""

    def _report(run: RunResult, args: Any) -> View:
        extra = sections(args)
        text = "markdown" if args.markdown else "all" if args.all else "short"
        if text == "short" and (args.html is not None or args.pyperf is not None):
            text = ""
        rest = f"Every table: vfab-bench report {args.file} --all."
        return view(run, args.statistic, text, rest, extra)

    return Kind(
        files.RUN,
        "run file",
        load=lambda found: RunResult.from_json(found.data),
        report=_report,
        report_options=frozenset(
            {"all", "markdown", "statistic", "sweep", "scale", "html", "pyperf"}
        ),
        compare=compare_runs.view,
        compare_options=compare_runs.OPTIONS,
    )
