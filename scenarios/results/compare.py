"""The one comparison of two results, for every kind compare reads (run,
sweep, matrix: compare_runs.py; scale, counts: their packages' compare.py;
the release verdict over them): a Change per thing compared, OLD -> NEW,
gathered in a Comparison, shown one way (text within WIDTH columns,
Markdown, JSON derived from the dataclasses).  A kind supplies only what
differs: how its cells are keyed (its compare function) and what a cell's
measure is (its Change: the two values as text, the verdict, whether it
changed); pyperf's compare and formatter are the model (docs/internals.md).
"""

from __future__ import annotations

import dataclasses
import textwrap
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, ClassVar, TypeVar

from scenarios.results.files import ResultsError
from scenarios.results.kinds import View
from scenarios.results.table import WIDTH, paragraph, wrapped
from vfab.codec import Derived

#: The fewest columns a change too long for its line wraps in beside the
#: rest of the line; with less room it goes whole under the row, indented.
CHANGE_ROOM = 30

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

#: compare's exit status when a kind's gate fails (--fail-above).
EXIT_GATE = 1
#: compare's exit status when a gate compared less than both files hold
#: (the release's NOT FULLY CHECKED: scenarios.errors.EXIT_INVARIANTS).
EXIT_NOT_FULLY_CHECKED = 3


@dataclasses.dataclass(frozen=True)
class Row:
    """One thing compared as a view shows it: *label* (a task, a point),
    *fields* between it and the values (trials, a measure's name), *old*
    and *new* as text, *change*: the ratio and verdict in words."""

    label: str
    old: str
    new: str
    change: str
    fields: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Change(Derived):
    """One cell OLD -> NEW: *row* (a task, a point) of *column* (a storage,
    "file vs mapping").  A kind's subclass says what its measure is: its
    two values as text (values), its verdict, and whether --changed shows
    it (changed); the line, the row and the JSON are this class's."""

    column: str
    row: str

    #: The JSON: the fields but JSON_SKIP's, JSON_FLAT's merged in, then
    #: JSON_EXTRA's properties (codec.derived).
    JSON_SKIP: ClassVar[tuple[str, ...]] = ()
    JSON_FLAT: ClassVar[tuple[str, ...]] = ()
    JSON_EXTRA: ClassVar[tuple[str, ...]] = ("verdict",)

    def values(self) -> tuple[str, str]:
        """The old and the new value, as text."""
        raise NotImplementedError

    @property
    def verdict(self) -> str:
        raise NotImplementedError

    @property
    def changed(self) -> bool:
        """Worth showing under --changed: moved, or undecided."""
        raise NotImplementedError

    @property
    def label(self) -> str:
        return self.row

    @property
    def cell_name(self) -> str:
        """The cell in a sentence: its column, then its label."""
        return f"{self.column} {self.label}"

    @property
    def prefix(self) -> str:
        """What a line says before the values (the measure's name)."""
        return ""

    @property
    def words(self) -> str:
        """What a line says after the values."""
        return self.verdict

    def fields(self) -> tuple[str, ...]:
        return ()

    def row_words(self, pvalues: bool = False) -> str:
        """What a row says after the values."""
        return self.words

    @property
    def line(self) -> str:
        old, new = self.values()
        return f"{self.prefix}{old} -> {new}: {self.words}"

    def shown_row(self, pvalues: bool = False) -> Row:
        old, new = self.values()
        return Row(self.label, old, new, self.row_words(pvalues), self.fields())


@dataclasses.dataclass(frozen=True)
class Comparison(Derived):
    """Every Change of two results, what one of them only has (*unmatched*),
    what differs between the two sides' environments (*causes*: package
    versions, implementations, commit, Python; said first) and lines to
    say before the cells (*warnings*: the machines' speeds).  A kind's
    subclass gives the heading and the summary."""

    kind: str
    title: str
    cells: tuple[Change, ...]
    unmatched: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    causes: tuple[str, ...] = ()

    #: The Markdown tables' header: the label, the fields, old, new, change.
    HEADER: ClassVar[tuple[str, ...]] = ("task", "old", "new", "change")
    JSON_SKIP: ClassVar[tuple[str, ...]] = ()
    JSON_EXTRA: ClassVar[tuple[str, ...]] = ("summary",)

    def heading(self) -> str:
        raise NotImplementedError

    def summary(self) -> str | list[str]:
        """One line (a str), or one per column (a list)."""
        raise NotImplementedError

    def notes(self) -> list[str]:
        """What to say after the cells."""
        return [unmatched_line(self.unmatched)] if self.unmatched else []

    def opening(self) -> list[str]:
        """What to say first: how the two sides' environments differ."""
        return [causes_line(self.causes)] if self.causes else []

    def first(self) -> list[str]:
        """What to say after the heading, before the cells."""
        return list(self.warnings)

    @property
    def columns(self) -> list[str]:
        return list(dict.fromkeys(c.column for c in self.cells))

    def shown(self, changed: bool = False) -> list[Change]:
        """The cells the views show, in order (with *changed*, only those
        that moved or are undecided)."""
        return [c for c in self.cells if c.changed or not changed]

    def rows(
        self, pvalues: bool = False, changed: bool = False
    ) -> dict[str, list[Row]]:
        """Per column, a row per shown cell."""
        shown = self.shown(changed)
        out = {
            col: [c.shown_row(pvalues) for c in shown if c.column == col]
            for col in self.columns
        }
        return {col: rows for col, rows in out.items() if rows}

    def summary_text(self) -> str:
        s = self.summary()
        if isinstance(s, str):
            return wrapped(f"Summary: {s}.")
        return "\n".join(["Summary:", *(wrapped(f"  {x}") for x in s)])

    def text(self, pvalues: bool = False, changed: bool = False) -> str:
        """The heading, a block per column (a line per cell: the values and
        the verdict, p and q with *pvalues*), the notes, the summary."""
        parts = [*map(paragraph, self.opening()), paragraph(self.heading())]
        parts += map(paragraph, self.first())
        rows = self.rows(pvalues, changed)
        parts += [block(column, r) for column, r in rows.items()]
        if changed and not rows:
            parts.append("No cell changed and every cell was decided.")
        parts += map(paragraph, self.notes())
        parts.append(self.summary_text())
        return "\n\n".join(parts) + "\n"

    def markdown(self, pvalues: bool = False, changed: bool = False) -> str:
        parts = [f"# {self.heading()}", *self.opening(), *self.first()]
        rows = self.rows(pvalues, changed)
        parts += [table(column, self.HEADER, r) for column, r in rows.items()]
        s = self.summary()
        if isinstance(s, str):
            summary = " ".join(self.summary_text().split())
        else:
            summary = "\n".join(f"- {x}" for x in s)
        return "\n\n".join([*parts, *self.notes(), summary]) + "\n"

    def view(
        self,
        failed: Sequence[str] = (),
        what: str = "",
        most: int = 8,
        shown: tuple[bool, bool] = (False, False),
        unchecked: Sequence[str] = (),
        **files: Callable[[], str],
    ) -> View:
        """compare's view: the text, the JSON, the Markdown and *files*
        (*shown*: pvalues and changed).  With *failed* cells (biggest
        first), the gate's line on stderr ("vfab-bench compare: WHAT: " and
        the first *most* cells that fit within WIDTH: the text names each),
        after what differs between the environments, and EXIT_GATE; else
        with *unchecked* (what the gate could not compare), a line saying
        so and EXIT_NOT_FULLY_CHECKED."""
        note, status = "", 0
        head = "vfab-bench compare: "
        if self.causes:
            head += f"environments differ ({listed(self.causes, 3)}); "
        if failed:
            head += f"{what}: "
            note = head + listed(failed, most, max(WIDTH - len(head), 0))
            status = EXIT_GATE
        elif unchecked:
            head += "NOT FULLY CHECKED: compared less than both files hold: "
            note = head + listed(unchecked, most, max(WIDTH - len(head), 0))
            status = EXIT_NOT_FULLY_CHECKED
        return View(
            self.text(*shown),
            {"json": self.to_json, "markdown": lambda: self.markdown(*shown), **files},
            note,
            status,
        )


# -- what every kind's compare shares -----------------------------------------


def check_same(
    a: Mapping[str, Any],
    b: Mapping[str, Any],
    old_name: str,
    new_name: str,
    meaning: str = "they measured different data sets",
) -> None:
    """ResultsError naming the first of *a*'s keys whose value *b* does not
    share (two files' identities: size, scale, seed...)."""
    for key in a:
        if a[key] != b.get(key):
            raise ResultsError(
                f"{old_name} and {new_name} differ in {key} ({a[key]} vs "
                f"{b.get(key)}): {meaning}"
            )


def one_side(a: Mapping[K, Any], b: Mapping[K, Any]) -> list[tuple[K, bool]]:
    """The keys only one of *a* and *b* has, *a*'s first, each with whether
    it is *a*'s (OLD's)."""
    keys = [*a, *(k for k in b if k not in a)]
    return [(k, k in a) for k in keys if (k in a) != (k in b)]


def paired(
    a: Mapping[K, V], b: Mapping[K, V], old_name: str, new_name: str, what: str
) -> list[tuple[K, V, V]]:
    """(key, old, new) for each key both *a* and *b* have, in *a*'s order;
    ResultsError when they have none (*what*: "cell", "point")."""
    out = [(k, v, b[k]) for k, v in a.items() if k in b]
    if not out:
        raise ResultsError(f"{old_name} and {new_name} have no {what} in common")
    return out


def causes_line(causes: Sequence[str]) -> str:
    """What differs between the two sides' environments, in one sentence."""
    return "Environments differ: " + "; ".join(causes) + "."


def unmatched_line(unmatched: Sequence[str]) -> str:
    return f"In one file only ({len(unmatched)}): " + "; ".join(unmatched)


def listed(items: Sequence[str], most: int, room: int | None = None) -> str:
    """The first *most* of *items*, "; " between them, and how many more;
    with *room*, only as many as fit in that many columns (one at least):
    a gate's line stays one line a CI log can grep, within the width of
    every view, and the view on stdout names every cell."""
    shown = 1
    while shown < min(most, len(items)):
        rest = len(items) - shown - 1
        more = f"; and {rest} more" if rest else ""
        if room is not None and len("; ".join(items[: shown + 1]) + more) > room:
            break
        shown += 1
    out = "; ".join(items[:shown]) if items else ""
    if len(items) > shown:
        out += f"; and {len(items) - shown} more"
    return out


# -- the rows, laid out --------------------------------------------------------


def block(title: str, rows: Sequence[Row], width: int = WIDTH) -> str:
    """ "title:" then a line per row, indented: the label left-aligned, the
    fields and the old value right-aligned, "-> new:" left-aligned, each to
    its widest, then the change; a change too long for the line wraps under
    itself (or, with too little room beside, under the row), never cut."""
    label = max(len(r.label) for r in rows)
    fields = [max(len(r.fields[i]) for r in rows) for i in range(len(rows[0].fields))]
    old = max(len(r.old) for r in rows)
    new = max(len(r.new) for r in rows) + len("-> :")
    lines = [f"{title}:"]
    for r in rows:
        cells = [r.label.ljust(label)]
        cells += [f.rjust(w) for f, w in zip(r.fields, fields, strict=True)]
        cells.append(r.old.rjust(old))
        head = "  " + "  ".join(cells) + " " + f"-> {r.new}:".ljust(new) + " "
        room = width - len(head)
        if len(r.change) > room and room < CHANGE_ROOM:
            lines.append(head.rstrip())
            head = " " * 6
        lines += _wrap(r.change, head, width)
    return "\n".join(lines)


def _wrap(change: str, head: str, width: int) -> list[str]:
    """*change* after *head*, its continuation under itself: wrapped where
    its parts meet (two spaces: "0.94x, inconclusive  (p 0.58, q 0.65)"),
    a part longer than the room wrapped at its words."""
    room = width - len(head)
    lines: list[str] = []
    line = ""
    for part in change.split("  "):
        if line and len(line) + 2 + len(part) > room:
            lines.append(line)
            line = ""
        line = f"{line}  {part}" if line else part
        if len(line) > room:
            *full, line = textwrap.wrap(line, room, break_on_hyphens=False)
            lines += full
    lines.append(line)
    pad = " " * len(head)
    return [(head if i == 0 else pad) + x for i, x in enumerate(lines)]


def table(title: str, header: Sequence[str], rows: Sequence[Row]) -> str:
    """A '##' heading and a GitHub table: *header* names the label, the
    fields, old, new and change, in that order."""
    lines = [f"## {title}", "", "| " + " | ".join(header) + " |"]
    lines.append("|---|" + "---:|" * (len(header) - 2) + "---|")
    for r in rows:
        cells = [r.label, *r.fields, r.old, r.new, r.change]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
