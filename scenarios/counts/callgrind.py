"""Read callgrind's dump files: instructions per labelled dump, per process
(the files and the lines read: docs/internals.md).
"""

from __future__ import annotations

import re
from pathlib import Path

_TRIGGER = re.compile(r"^desc: Trigger: (?:Client Request: |dump )(\S+)\s*$")
_SUMMARY = re.compile(r"^summary: (\d+)\s*$")
_NAME = re.compile(r"^callgrind\.out\.(\d+)\.(\d+)$")

#: {pid: {label: instructions}}
Dumps = dict[int, dict[str, int]]


def read_header(path: Path) -> tuple[str | None, int | None]:
    """(label, instructions) of one dump file; the header is short, so only
    its start is read (the rest is the per-function costs)."""
    label = total = None
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if m := _TRIGGER.match(line):
                label = m.group(1)
            elif m := _SUMMARY.match(line):
                total = int(m.group(1))
            elif line.startswith(("fl=", "fn=", "ob=")):
                # Costs start; a summary line comes before them.
                break
    return label, total


def read_dumps(directory: Path, skip: str) -> Dumps:
    """Every labelled dump in *directory*, but the throwaway ones (*skip*)."""
    out: Dumps = {}
    files = []
    for path in directory.iterdir():
        if m := _NAME.match(path.name):
            files.append((int(m.group(1)), int(m.group(2)), path))
    for pid, _part, path in sorted(files):
        label, total = read_header(path)
        if label is None or total is None or label == skip:
            continue
        out.setdefault(pid, {})[label] = total
    return out
