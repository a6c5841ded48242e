"""One rendering of a compared row for every kind compare reads (run, sweep,
matrix, scale, counts, and the release verdict's detail): each kind turns
its differences into Rows, this module lays them out as text within WIDTH
columns, and as Markdown (issue 33: one rendering, each kind supplying only
what differs)."""

from __future__ import annotations

import dataclasses
import textwrap
from collections.abc import Sequence

from scenarios.results.table import WIDTH

#: The fewest columns a change too long for its line wraps in beside the
#: rest of the line; with less room it goes whole under the row, indented.
CHANGE_ROOM = 30


@dataclasses.dataclass(frozen=True)
class Row:
    """One thing compared: *label* (a task, a point), *fields* between it
    and the values (trials, p and q), *old* and *new* as text, *change*:
    the ratio and verdict in words."""

    label: str
    old: str
    new: str
    change: str
    fields: tuple[str, ...] = ()


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


def markdown(title: str, header: Sequence[str], rows: Sequence[Row]) -> str:
    """A '##' heading and a GitHub table: *header* names the label, the
    fields, old, new and change, in that order."""
    lines = [f"## {title}", "", "| " + " | ".join(header) + " |"]
    lines.append("|---|" + "---:|" * (len(header) - 2) + "---|")
    for r in rows:
        cells = [r.label, *r.fields, r.old, r.new, r.change]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
