"""The table that started it all: the MEMS Exchange's virtual fab, 2000.

Rows are tasks (the names of scenarios.bench.phases.PHASES_2000), columns
storages, cells seconds on their "small" data set (docs/run.md tells the story).
"""

from __future__ import annotations

#: The 2000 columns, in their order.
COLUMNS_2000: tuple[str, ...] = ("in-memory", "ZODB", "ZEO")

#: task -> seconds per column of COLUMNS_2000.
TABLE_2000: dict[str, tuple[float, float, float]] = {
    "create users/groups": (0.04, 0.15, 4.90),
    "commit users/groups": (0.01, 0.06, 5.12),
    "convert processes": (2.20, 3.34, 3.42),
    "commit processes": (0.01, 7.86, 260.00),
    "query processes": (0.66, 1.19, 20.00),
    "generate sequences": (1.20, 1.25, 2.80),
    "commit sequences": (0.00, 1.76, 207.00),
    "query sequences": (0.00, 0.00, 0.07),
}
