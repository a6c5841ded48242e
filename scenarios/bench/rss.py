"""Peak resident set size of this process, per phase where Linux lets the
peak be reset (clear_refs), else since the process started (getrusage);
never a server's (docs/internals.md).
"""

from __future__ import annotations

import re
import resource
import sys

_HWM = re.compile(rb"^VmHWM:\s+(\d+)\s+kB", re.MULTILINE)


def reset_peak() -> bool:
    """Start a new peak from the current RSS; False where that cannot be done
    (then peak_bytes() is the peak since the process started)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return False
    return True


def peak_bytes() -> int:
    """The peak RSS since the last reset_peak(), or since the start."""
    try:
        with open("/proc/self/status", "rb") as f:
            m = _HWM.search(f.read())
        if m:
            return int(m.group(1)) * 1024
    except OSError:
        pass
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(maxrss if sys.platform == "darwin" else maxrss * 1024)


def per_phase() -> bool:
    """Whether peaks can be taken per phase on this machine."""
    return reset_peak()
