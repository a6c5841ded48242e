"""The one table renderer: every command's tables as aligned text or Markdown.

A Table is a title, a header and rows of cells already formatted as text
(the command decides what a cell says; this module only lays it out).
Cells often come from a file (a storage name): their control characters
are shown escaped before the columns are measured, so that they neither
act on the terminal nor break the alignment.  A table wider than WIDTH
(one column per storage, many storages) is cut into groups of whole
columns, each under the first column's labels, a blank line apart: no
cell is truncated and no line wraps.
"""

from __future__ import annotations

import dataclasses
import textwrap

from scenarios.printable import shown

#: The widest a line of text output may be.
WIDTH = 100


@dataclasses.dataclass(frozen=True)
class Table:
    """One table.  *label_left*: the first column is labels, left-aligned
    (every other column is right-aligned).  *total*: the last row sums the
    others, set apart by a rule (the header always is when *total* is set)."""

    title: str
    header: list[str]
    rows: list[list[str]]
    label_left: bool = True
    total: bool = False

    def lines(self, separator: str = "  ", width: int = WIDTH) -> list[str]:
        """The header and rows as aligned text lines, without the title; in
        groups of columns when wider than *width*."""
        rows = [[shown(c) for c in row] for row in (self.header, *self.rows)]
        widths = [max(len(r[i]) for r in rows) for i in range(len(self.header))]
        out: list[str] = []
        for group in _groups(widths, len(separator), width):
            if out:
                out.append("")
            out += self._block(rows, widths, group, separator)
        return out

    def _block(
        self, rows: list[list[str]], widths: list[int], group: list[int], sep: str
    ) -> list[str]:
        rule = sep.join("-" * widths[j] for j in group)
        out = []
        for i, row in enumerate(rows):
            cells = []
            for j in group:
                left = j == 0 and self.label_left
                cells.append(
                    row[j].ljust(widths[j]) if left else row[j].rjust(widths[j])
                )
            out.append(sep.join(cells).rstrip())
            if self.total and (i == 0 or i == len(rows) - 2):
                out.append(rule)
        return out

    def text(self) -> str:
        """The title, then the aligned lines."""
        title = [wrapped(shown(self.title))] if self.title else []
        return "\n".join(title + self.lines())

    def markdown(self) -> str:
        """A '##' heading and a GitHub table (cells stripped, numbers
        right-aligned)."""
        align = ["---" if self.label_left else "---:"]
        align += ["---:"] * (len(self.header) - 1)
        lines = [
            f"## {shown(self.title)}",
            "",
            "| " + " | ".join(shown(c) for c in self.header) + " |",
            "|" + "|".join(align) + "|",
        ]
        lines += [
            "| " + " | ".join(shown(c).strip() for c in row) + " |" for row in self.rows
        ]
        return "\n".join(lines)


def _groups(widths: list[int], sep: int, width: int) -> list[list[int]]:
    """Column indexes in groups whose lines fit *width*, the first column
    (the labels) in each; one group when the whole table fits, and a
    column wider than the rest of the line alone with the labels."""
    if sum(widths) + sep * (len(widths) - 1) <= width or len(widths) < 3:
        return [list(range(len(widths)))]
    groups: list[list[int]] = []
    group = [0]
    used = widths[0]
    for j in range(1, len(widths)):
        if len(group) > 1 and used + sep + widths[j] > width:
            groups.append(group)
            group, used = [0], widths[0]
        group.append(j)
        used += sep + widths[j]
    groups.append(group)
    return groups


def paragraph(text: str, width: int = WIDTH - 21) -> str:
    """A paragraph of prose filled to 79 columns (no word broken, at a
    hyphen or anywhere: a storage's name and a path stay whole)."""
    return textwrap.fill(
        " ".join(text.split()),
        width,
        break_on_hyphens=False,
        break_long_words=False,
    )


def wrapped(line: str, width: int = WIDTH) -> str:
    """A line of a list (a note, a summary, a step) within *width* columns,
    its continuation lines indented two more than its own first line; no
    word broken (a path stays whole, to be copied)."""
    indent = line[: len(line) - len(line.lstrip())]
    return textwrap.fill(
        line.strip(),
        width,
        initial_indent=indent,
        subsequent_indent=indent + "  ",
        break_on_hyphens=False,
        break_long_words=False,
    )


def text(tables: list[Table], legend: str = "") -> str:
    """Tables as plain text, a blank line apart, then *legend* (filled)."""
    parts = [t.text() for t in tables] + ([paragraph(legend)] if legend else [])
    return "\n\n".join(parts) + "\n"


def markdown(tables: list[Table], preamble: list[str], legend: str = "") -> str:
    """Tables as Markdown after *preamble* (heading, run line), then *legend*."""
    parts = [*preamble, *(t.markdown() for t in tables)]
    parts += [legend] if legend else []
    return "\n\n".join(parts) + "\n"
