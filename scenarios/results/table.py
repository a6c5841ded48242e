"""The one table renderer: every command's tables as aligned text or Markdown.

A Table is a title, a header and rows of cells already formatted as text
(the command decides what a cell says; this module only lays it out).
Cells often come from a file (a storage name): their control characters
are shown escaped before the columns are measured, so that they neither
act on the terminal nor break the alignment.
"""

from __future__ import annotations

import dataclasses

from scenarios.printable import shown


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

    def lines(self, separator: str = "  ") -> list[str]:
        """The header and rows as aligned text lines, without the title."""
        rows = [[shown(c) for c in row] for row in (self.header, *self.rows)]
        widths = [max(len(r[i]) for r in rows) for i in range(len(self.header))]
        rule = separator.join("-" * w for w in widths)
        out = []
        for i, row in enumerate(rows):
            cells = []
            for j, (c, w) in enumerate(zip(row, widths, strict=True)):
                left = j == 0 and self.label_left
                cells.append(c.ljust(w) if left else c.rjust(w))
            out.append(separator.join(cells).rstrip())
            if self.total and (i == 0 or i == len(rows) - 2):
                out.append(rule)
        return out

    def text(self) -> str:
        """The title, then the aligned lines."""
        return "\n".join(([shown(self.title)] if self.title else []) + self.lines())

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


def text(tables: list[Table], legend: str = "") -> str:
    """Tables as plain text, a blank line apart, then *legend*."""
    parts = [t.text() for t in tables] + ([legend] if legend else [])
    return "\n\n".join(parts) + "\n"


def markdown(tables: list[Table], preamble: list[str], legend: str = "") -> str:
    """Tables as Markdown after *preamble* (heading, run line), then *legend*."""
    parts = [*preamble, *(t.markdown() for t in tables)]
    parts += [legend] if legend else []
    return "\n\n".join(parts) + "\n"
