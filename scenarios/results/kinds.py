"""What a result kind is (Kind), what a command shows (View), and sniff():
the one place a file's kind is told, from the file read once.

The kinds themselves are listed in scenarios/registry.py, as the storages
are in storages/registry.py.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from scenarios.results.files import Format, ResultsError, read_json

#: The file that makes a directory a release (vfab-bench release --out).
RELEASE_SUMMARY = "release.json"


@dataclasses.dataclass(frozen=True)
class Found:
    """A path as sniff() found it: its kind ("run", "sweep", "release"...;
    None: no vfab-bench result) and its JSON, parsed (a release's
    release.json; None for a directory without one)."""

    path: Path
    kind: str | None
    data: Any


def sniff(path: Path) -> Found:
    """What *path* holds.  A directory is a release if it holds
    release.json; a file's JSON names its "kind", and a run file, which has
    none, its "schema_version".  ResultsError when it cannot be read."""
    if path.is_dir():
        summary = path / RELEASE_SUMMARY
        try:
            os.listdir(path)  # readable, or said now: not "no run file" later
            if not summary.exists():
                return Found(path, None, None)
        except OSError as e:
            raise ResultsError(f"cannot read directory {path}: {e.strerror}") from None
        try:
            return Found(path, "release", read_json(summary))
        except ResultsError as e:
            raise ResultsError(f"{path} is damaged: {e}") from None
    data = read_json(path)
    if isinstance(data, dict):
        kind = data.get("kind")
        if isinstance(kind, str):
            return Found(path, kind, data)
        if kind is None and "schema_version" in data:
            return Found(path, "run", data)
    return Found(path, None, data)


@dataclasses.dataclass(frozen=True)
class View:
    """What a command shows: the *text* it prints, the *files* it can write
    (output option -> their content, made when asked: data for "json",
    text for the others; None: nothing to write), a *note* for stderr and
    the exit *status*."""

    text: str = ""
    files: Mapping[str, Callable[[], Any]] = dataclasses.field(default_factory=dict)
    note: str = ""
    status: int = 0


def shown(
    run: Any, report: Any, text: str, files: Mapping[str, Callable[[], Any]], *how: Any
) -> View:
    """*run*'s View: its *text* ("text", "markdown" or "": none) by
    *report*'s text() or markdown() of (run, *how), its JSON and *files*."""
    render = {"text": report.text, "markdown": report.markdown}
    return View(render[text](run, *how) if text else "", {"json": run.to_json, **files})


def report_text(args: Any) -> str:
    """What report prints of a file: "markdown" (--markdown), nothing when
    it writes a page (--html: the page is the output), else "text"."""
    return "markdown" if args.markdown else "" if args.html is not None else "text"


#: A view of one result (report), and of two or one against a baseline
#: (compare), from the command's options.
Report = Callable[[Any, Any], View]
Compare = Callable[[Any, Any, Any], View]


@dataclasses.dataclass(frozen=True)
class Kind:
    """One kind of result: its file *format*, how its model is built from a
    file sniff() found (*load*), and its views: *report* and *compare*
    (None: the command does not read it), each with the command options
    that apply to it (the others are refused in one line)."""

    format: Format
    #: "run file", "release directory": how messages name one.
    noun: str
    load: Callable[[Found], Any] | None = None
    report: Report | None = None
    report_options: frozenset[str] = frozenset()
    compare: Compare | None = None
    compare_options: frozenset[str] = frozenset()

    @property
    def name(self) -> str:
        return self.format.name

    @property
    def plural(self) -> str:
        return self.noun.replace("directory", "directories").replace("file", "files")


def stored(
    model: Any,
    noun: str,
    view: Callable[..., View],
    report_options: frozenset[str],
    compare: Compare | None = None,
    compare_options: frozenset[str] = frozenset(),
) -> Kind:
    """The Kind of a schema.Stored *model* whose report is *view*(run,
    [statistic,] text=report_text(args)): the statistic given when
    *report_options* take it."""

    def report(run: Any, args: Any) -> View:
        how = (args.statistic,) if "statistic" in report_options else ()
        return view(run, *how, text=report_text(args))

    return Kind(
        model.FORMAT,
        noun,
        load=lambda found: model.from_json(found.data),
        report=report,
        report_options=report_options,
        compare=compare,
        compare_options=compare_options,
    )
