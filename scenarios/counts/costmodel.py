"""The cost model: one time run and one count run of the same work give
nanoseconds per instruction per phase and storage: the machine's figure
where a phase only computes, more where it waits for the disk or the
network (docs/internals.md).
"""

from __future__ import annotations

from scenarios.counts.model import INSTRUCTIONS, CountRun
from scenarios.results.files import ResultsError
from scenarios.results.model import RunResult
from scenarios.results.significance import SHORT_S
from scenarios.results.table import Table

#: A cell at most this many times the machine's figure is CPU-bound.
CPU_BOUND_RATIO = 1.3


def ns_per_instruction(
    times: RunResult, counts: CountRun
) -> dict[tuple[str, str, str], float]:
    """(storage, size, phase) -> wall ns per instruction, for every cell both
    runs have that took at least SHORT_S."""
    out = {}
    for r in times.results:
        c = counts.get(r.storage, r.phase, r.size)
        if c is None:
            continue
        client = c.cell("client", INSTRUCTIONS)
        server = c.cell("server", INSTRUCTIONS, exact_here=False)
        instructions = (client.value if client else 0) + (server.value if server else 0)
        wall = min(r.wall_values)
        if instructions and wall >= SHORT_S:
            out[(r.storage, r.size, r.phase)] = wall * 1e9 / instructions
    return out


def machine_figure(values: list[float]) -> float | None:
    """The lower quartile of *values* (ns per instruction)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[(len(ordered) - 1) // 4]


def cost_tables(times: RunResult, counts: CountRun) -> list[Table]:
    """One table per size: ns per instruction (ratio to the machine's)."""
    check_same_work(times, counts)
    per = ns_per_instruction(times, counts)
    if not per:
        raise ResultsError("the time and count files have no cell in common")
    figure = machine_figure(list(per.values()))
    assert figure is not None
    out = []
    storages = [s for s in times.storages if s in counts.storages]
    for size in times.sizes:
        rows = []
        for phase in times.phases:
            row = [phase]
            for storage in storages:
                v = per.get((storage, size, phase))
                if v is None:
                    row.append("-")
                    continue
                ratio = v / figure
                mark = "" if ratio <= CPU_BOUND_RATIO else " waits"
                row.append(f"{v:.3f} ({ratio:.1f}x){mark}")
            rows.append(row)
        out.append(
            Table(
                f"cost model: wall ns per instruction (client + server), size "
                f"{size}; this machine: {figure:.3f} ns (lower quartile); "
                f"'waits': over {CPU_BOUND_RATIO}x it, waiting for I/O or the "
                "network",
                ["task:", *storages],
                rows,
            )
        )
    return out


def check_same_work(times: RunResult, counts: CountRun) -> None:
    a = times.metadata.get("config", {})
    b = counts.metadata.get("config", {})
    for key in ("scale", "seed", "batch"):
        if a.get(key) != b.get(key):
            raise ResultsError(
                f"the time and count files differ in {key} ({a.get(key)} vs "
                f"{b.get(key)}): they measured different work"
            )
