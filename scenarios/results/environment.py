"""The machine a run ran on, noted as pyperf notes it: CPU, governor, the
load average at the start and the end with a warning when busy, and the
speed probes that tell when two runs met different machines
(docs/internals.md).
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path
from typing import Any

#: A load average per core above this, at the start or the end of a run,
#: means other work shared the machine (pyperf warns likewise).
BUSY_LOAD_PER_CPU = 0.5

#: Iterations of probe()'s loop: about 1 ms on this machine's fast spells.
PROBE_LOOPS = 20_000
#: A probe this many times the run's fastest ran in a slow spell.
SLOW_PROBE = 1.25
#: Two runs whose median probes differ by more than this met machines of
#: different speeds (compare warns).
SPEED_DIFFERENCE = 0.10


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


def finish(environment: dict[str, Any], own: int = 0) -> dict[str, Any]:
    """*environment* with the load average at the end and, when the machine
    was busy at either end, a "warnings" list saying so.  *own*: the tasks
    the command itself ran in its last minute (a matrix's clients and its
    server), which the 1-minute load at the end still counts."""
    out = dict(environment, load_average_end=load_average())
    if own:
        out["own_tasks"] = own
    warnings = busy_warnings(out)
    if warnings:
        out["warnings"] = warnings
    return out


def busy_warnings(environment: dict[str, Any]) -> list[str]:
    """One line per sign that other work shared the machine: the load at
    the end less what the command ran itself ("own_tasks")."""
    cpus = environment.get("cpu_count") or 1
    own = environment.get("own_tasks") or 0
    out = []
    for when in ("start", "end"):
        loads = environment.get(f"load_average_{when}")
        if not loads:
            continue
        others = loads[0] - (own if when == "end" else 0)
        if others / cpus > BUSY_LOAD_PER_CPU:
            mine = f", {own} of it this run's own" if own and when == "end" else ""
            out.append(
                f"the machine was busy at the {when} of the run (load average "
                f"{loads[0]:.2f} on {cpus} CPUs{mine}): figures may be slower "
                "and noisier than on an idle machine"
            )
    return out


def probe() -> float:
    """Seconds one pass of a fixed pure-Python loop takes now (integer
    arithmetic: no I/O, no allocation to speak of): how fast the machine
    runs Python at this moment."""
    started = time.perf_counter()
    total = 0
    for i in range(PROBE_LOOPS):
        total += i * i
    return time.perf_counter() - started


def speed(environment: dict[str, Any]) -> dict[str, float] | None:
    """The speed probes of a run ("speed_probes_s"): how many, the fastest
    and the median in seconds, and the share of slow ones (over SLOW_PROBE
    times the fastest); None when the run has none."""
    probes = environment.get("speed_probes_s") or []
    if not probes:
        return None
    fastest = min(probes)
    return {
        "n": len(probes),
        "fastest_s": fastest,
        "median_s": statistics.median(probes),
        "slow_share": sum(p > fastest * SLOW_PROBE for p in probes) / len(probes),
    }


def speed_line(environment: dict[str, Any]) -> str | None:
    """One sentence on the machine's speed during a run, or None."""
    s = speed(environment)
    if s is None:
        return None
    return (
        f"Speed probe (a fixed Python loop, {s['n']} times between rounds): "
        f"fastest {s['fastest_s'] * 1e3:.2f} ms, median "
        f"{s['median_s'] * 1e3:.2f} ms; {s['slow_share']:.0%} of the probes "
        f"ran in a slow spell (over {SLOW_PROBE}x the fastest)."
    )


def speed_warning(
    old: dict[str, Any], new: dict[str, Any], old_name: str, new_name: str
) -> str | None:
    """A warning when two runs' median probes differ by more than
    SPEED_DIFFERENCE: every cell may then differ by the machine, not by
    the code."""
    a, b = speed(old), speed(new)
    if a is None or b is None:
        return None
    ratio = b["median_s"] / a["median_s"]
    if abs(ratio - 1) <= SPEED_DIFFERENCE:
        return None
    return (
        f"warning: the machine ran at different speeds: the speed probe's "
        f"median was {a['median_s'] * 1e3:.2f} ms in {old_name} and "
        f"{b['median_s'] * 1e3:.2f} ms in {new_name} ({ratio:.2f}x); a "
        "difference in every cell may be the machine's, not the code's"
    )


def of(metadata: dict[str, Any]) -> dict[str, Any]:
    """The environment a result's metadata recorded: its "environment", or
    for files that kept only the load average ("load_average",
    "load_average_after": scale files of format 3 and older) one built
    from it."""
    env = metadata.get("environment")
    if isinstance(env, dict):
        return env
    out: dict[str, Any] = {}
    host = metadata.get("host") or {}
    if isinstance(host, dict) and host.get("cpu_count"):
        out["cpu_count"] = host["cpu_count"]
    if metadata.get("load_average"):
        out["load_average_start"] = metadata["load_average"]
    if metadata.get("load_average_after"):
        out["load_average_end"] = metadata["load_average_after"]
    if out:
        out["warnings"] = busy_warnings(out)
    return out


def load_line(env: dict[str, Any]) -> str | None:
    """ "Load average (1 min) 0.42 at the start, 1.80 at the end, on 2
    CPUs." or None."""
    parts = []
    for when in ("start", "end"):
        loads = env.get(f"load_average_{when}")
        if loads:
            parts.append(f"{loads[0]:.2f} at the {when}")
    if not parts:
        return None
    cpus = env.get("cpu_count")
    on = f", on {cpus} CPUs" if cpus else ""
    own = env.get("own_tasks")
    mine = f" (the end's counts up to {own} tasks of this run's own)" if own else ""
    return f"Load average (1 min) {' and '.join(parts)}{on}{mine}."


def lines(metadata: dict[str, Any]) -> list[str]:
    """What a view says of the machine a result was measured on: the load
    average, the speed probe, and every busy warning (each "Warning: ...")."""
    env = of(metadata)
    out = [line for line in (load_line(env), speed_line(env)) if line]
    out += [f"Warning: {w}." for w in env.get("warnings") or ()]
    return out


def probes(n: int = 5) -> list[float]:
    """*n* speed probes now (about a millisecond each)."""
    return [probe() for _ in range(n)]


def record(
    start: dict[str, Any], speed_probes: list[float], own: int = 0
) -> dict[str, Any]:
    """finish(*start*, *own*) with *speed_probes*: the environment a command
    that has no rounds (scale, release, counts) keeps in its JSON."""
    out = finish(start, own)
    if speed_probes:
        out["speed_probes_s"] = speed_probes
    return out


def busy_summary(metadata: dict[str, Any]) -> str | None:
    """ "the machine was busy (load average 4.75 at the start and 4.80 at
    the end, on 2 CPUs)", or None when it was not."""
    env = of(metadata)
    if not env.get("warnings"):
        return None
    load = load_line(env) or ""
    detail = load.removeprefix("Load average (1 min) ").rstrip(".")
    return f"the machine was busy (load average {detail})"


def busy_lines(named: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """ "warning: NAME: the machine was busy (...)" for each of the (name,
    metadata) pairs whose machine was busy."""
    return [
        f"warning: {name}: {line}"
        for name, meta in named
        if (line := busy_summary(meta))
    ]
