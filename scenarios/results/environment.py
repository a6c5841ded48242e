"""The machine a run ran on, noted the way pyperf notes it.

CPU model, frequency governor and boost where Linux lets us read them, the
load average at the start and the end of the run, and a warning when the
machine was busy: another process competing for the cores slows every
trial it overlaps, and noise here only ever slows a trial down.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

#: A load average per core above this, at the start or the end of a run,
#: means other work shared the machine (pyperf warns likewise).
BUSY_LOAD_PER_CPU = 0.5


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def cpu_model() -> str | None:
    """The CPU's model name from /proc/cpuinfo (None elsewhere)."""
    text = _read("/proc/cpuinfo") or ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("model name", "Model", "cpu model"):
            return value.strip()
    return None


def cpu_frequency() -> dict[str, Any]:
    """Governor, scaling driver and boost of CPU 0, where sysfs has them."""
    base = "/sys/devices/system/cpu/cpu0/cpufreq/"
    out: dict[str, Any] = {}
    for key in ("scaling_governor", "scaling_driver"):
        value = _read(base + key)
        if value is not None:
            out[key.removeprefix("scaling_")] = value
    boost = _read("/sys/devices/system/cpu/cpufreq/boost")
    if boost is not None:
        out["boost"] = boost == "1"
    return out


def load_average() -> list[float] | None:
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except OSError:
        return None


def snapshot() -> dict[str, Any]:
    """What to record at the start of a run."""
    return {
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpu_affinity": sorted(os.sched_getaffinity(0))
        if hasattr(os, "sched_getaffinity")
        else None,
        "cpu_frequency": cpu_frequency(),
        "load_average_start": load_average(),
    }


def finish(environment: dict[str, Any]) -> dict[str, Any]:
    """*environment* with the load average at the end and, when the machine
    was busy at either end, a "warnings" list saying so."""
    out = dict(environment, load_average_end=load_average())
    warnings = busy_warnings(out)
    if warnings:
        out["warnings"] = warnings
    return out


def busy_warnings(environment: dict[str, Any]) -> list[str]:
    """One line per sign that other work shared the machine."""
    cpus = environment.get("cpu_count") or 1
    out = []
    for when in ("start", "end"):
        loads = environment.get(f"load_average_{when}")
        if loads and loads[0] / cpus > BUSY_LOAD_PER_CPU:
            out.append(
                f"the machine was busy at the {when} of the run (load average "
                f"{loads[0]:.2f} on {cpus} CPUs): figures may be slower and "
                "noisier than on an idle machine"
            )
    return out
