"""The micro-benchmarks' run (tests/benchmarks, pytest-benchmark): which
storages, how many rounds, which tests; its pytest arguments.  Below the
commands that run it (release, ab), so neither imports the other.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path


@dataclasses.dataclass(frozen=True)
class MicroPlan:
    """The pytest-benchmark micro suite: on these storages, at least
    *min_rounds* rounds of each benchmark and at most *max_time_s* seconds
    of rounds (pytest-benchmark: 5 and 1.0), the tests -k selects."""

    storages: tuple[str, ...]
    min_rounds: int
    max_time_s: float
    select: str = ""

    def pytest_args(self, json_path: Path) -> list[str]:
        args = [
            "--benchmark-only",
            f"--benchmark-json={json_path}",
            f"--benchmark-min-rounds={self.min_rounds}",
            f"--benchmark-max-time={self.max_time_s:g}",
        ]
        for name in self.storages:
            args += ["--storage", name]
        if self.select:
            args += ["-k", self.select]
        return args
