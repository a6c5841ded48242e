"""Read strace -f's log: I/O system calls per phase, per process kind.

The counted process marks each phase with access("MARK/begin/LABEL") and
access("MARK/end/LABEL") (scenarios.counts.meters); every traced call of any
thread or process between the two belongs to the phase.  With -f each line
starts with the thread's id; a call another thread interrupts is written in
two parts ("... <unfinished ...>", then "<... NAME resumed> ..."), counted
once, at its start.

Which calls are traced (TRACED) and how they are grouped (GROUPS): the calls
that do I/O.  fsync and fdatasync, reads, writes, seeks and sends counted
the same run to run for every storage, ZEO included; receives (and
epoll_wait and futex, not traced) depend on how a reply is split into
packets and on thread timing, and are marked as not exact.
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
