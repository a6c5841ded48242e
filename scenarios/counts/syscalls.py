"""Read strace -f's log: the I/O system calls of every thread and process
between a phase's two markers, grouped (which calls, and which are not
exact: docs/internals.md).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from pathlib import Path

from scenarios.counts.meters import MARK

#: Report group -> the system calls it sums.
GROUPS: dict[str, tuple[str, ...]] = {
    "fsync": ("fsync", "fdatasync", "sync_file_range"),
    "read": ("read", "pread64", "readv", "preadv", "preadv2"),
    "write": ("write", "pwrite64", "writev", "pwritev", "pwritev2"),
    "seek": ("lseek",),
    "send": ("sendto", "sendmsg", "sendmmsg"),
    "recv": ("recvfrom", "recvmsg", "recvmmsg"),
}

#: Groups whose counts depend on timing (not exact run to run).
TIMING_GROUPS = frozenset({"recv"})

#: What strace is told to trace: the groups' calls and the marker.
TRACED: tuple[str, ...] = (
    *(name for names in GROUPS.values() for name in names),
    "access",
)

_CALL = re.compile(r"^(\d+)\s+(?:<\.\.\. (\w+) resumed>|(\w+)\()")
_MARK = re.compile(r'access\("' + re.escape(MARK) + r'/(begin|end)/([^"]+)"')

#: {label: {"client" or "server": {group: count}}}
PhaseCalls = dict[str, dict[str, dict[str, int]]]

_GROUP_OF = {name: group for group, names in GROUPS.items() for name in names}


def read_log(path: Path, client_tids: Collection[int] | None) -> PhaseCalls:
    """The calls between each label's marks.  A call is the client's when
    its thread is one of *client_tids* (None: every thread is the client's:
    a storage with no server of its own), else the server's."""
    out: PhaseCalls = {}
    open_labels: list[str] = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = _CALL.match(line)
            if m is None or m.group(2) is not None:  # not a call, or resumed
                continue
            name = m.group(3)
            if name == "access":
                mark = _MARK.search(line)
                if mark is None:
                    continue
                kind, label = mark.groups()
                if kind == "begin":
                    open_labels.append(label)
                    out[label] = {
                        "client": dict.fromkeys(GROUPS, 0),
                        "server": dict.fromkeys(GROUPS, 0),
                    }
                elif label in open_labels:
                    open_labels.remove(label)
                continue
            group = _GROUP_OF.get(name)
            if group is None or not open_labels:
                continue
            tid = int(m.group(1))
            side = "client" if client_tids is None or tid in client_tids else "server"
            for label in open_labels:
                out[label][side][group] += 1
    return out
