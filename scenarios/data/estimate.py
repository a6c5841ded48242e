"""What a data set of a given scale needs, memory and disk, estimated from
measurements here, so that a scale that cannot fit is refused before any
work (the figures: docs/internals.md).
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

MB = 1024 * 1024
BASE_RSS = 60 * MB
RSS_PER_SCALE = int(0.8 * MB)
DISK_PER_SCALE = int(0.5 * MB)  # the data (~0.2 MB) and a pack's copy, rounded up


@dataclasses.dataclass(frozen=True)
class Estimate:
    scale: int
    memory_bytes: int
    disk_bytes: int

    @classmethod
    def of(cls, scale: int) -> Estimate:
        return cls(scale, BASE_RSS + RSS_PER_SCALE * scale, DISK_PER_SCALE * scale)


def available_memory() -> int | None:
    """MemAvailable from /proc/meminfo, in bytes (None where unknown)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def free_disk(directory: Path) -> int | None:
    """Free bytes on the filesystem holding *directory* (or its nearest
    existing parent)."""
    path = Path(directory).absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    try:
        return shutil.disk_usage(path).free
    except OSError:
        return None


def _gb(n: int) -> str:
    return f"{n / 1024**3:,.1f} GB"


def does_not_fit(scale: int, directory: Path) -> str | None:
    """Why a data set of *scale* cannot be built here (memory or disk in
    *directory*), or None."""
    estimate = Estimate.of(scale)
    memory = available_memory()
    if memory is not None and estimate.memory_bytes > memory:
        return (
            f"scale {scale:,} needs an estimated {_gb(estimate.memory_bytes)} "
            f"of memory; {_gb(memory)} is available"
        )
    disk = free_disk(directory)
    if disk is not None and estimate.disk_bytes > disk:
        return (
            f"scale {scale:,} needs an estimated {_gb(estimate.disk_bytes)} "
            f"of disk in {directory}; {_gb(disk)} is free"
        )
    return None
