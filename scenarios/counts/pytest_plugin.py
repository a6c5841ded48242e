"""pytest plugin: each pytest-benchmark target's instructions into its
benchmark's extra_info, when pytest runs under callgrind through
scenarios.counts.pytest_counts; inert anywhere else (docs/internals.md).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

DUMPS_VARIABLE = "VFAB_COUNTS_DUMPS"

_state: dict[str, Any] = {"dumps": 0, "started": False}

if os.environ.get(DUMPS_VARIABLE):
    from scenarios.counts import fixed

    fixed.fix_process()


def _counted(fixture: Any, target: Callable[..., Any]) -> Callable[..., Any]:
    from scenarios.counts import build, callgrind, typecache
    from scenarios.counts.meters import SKIP

    cg = build.load()
    directory = Path(os.environ[DUMPS_VARIABLE])

    @functools.wraps(target)
    def counted(*args: Any, **kwargs: Any) -> Any:
        if not _state["started"]:
            cg.start_instrumentation()
            _state["started"] = True
        # The same type cache before a benchmark's first call, whatever
        # pytest did before (scenarios.counts.typecache); its later calls
        # follow from it (once a call: about 0.1 s a call under callgrind).
        if not fixture.extra_info.get("instructions_rounds"):
            typecache.settle()
        cg.dump_stats_at(SKIP)
        cg.zero_stats()
        try:
            return target(*args, **kwargs)
        finally:
            cg.dump_stats_at("vfab-target")
            _state["dumps"] += 2
            path = directory / f"callgrind.out.{os.getpid()}.{_state['dumps']}"
            label, total = callgrind.read_header(path)
            if label == "vfab-target" and total is not None:
                rounds = fixture.extra_info.setdefault("instructions_rounds", [])
                rounds.append(total)
                fixture.extra_info["instructions"] = min(rounds)

    return counted


def pytest_configure(config: Any) -> None:
    if not os.environ.get(DUMPS_VARIABLE):
        return
    from pytest_benchmark.fixture import BenchmarkFixture

    from scenarios.counts import build

    if not build.load().running_on_valgrind():
        return
    call, pedantic = BenchmarkFixture.__call__, BenchmarkFixture.pedantic

    def patched_call(self: Any, function: Any, *args: Any, **kwargs: Any) -> Any:
        return call(self, _counted(self, function), *args, **kwargs)

    def patched_pedantic(self: Any, target: Any, *args: Any, **kwargs: Any) -> Any:
        return pedantic(self, _counted(self, target), *args, **kwargs)

    BenchmarkFixture.__call__ = patched_call  # type: ignore[method-assign,assignment]
    BenchmarkFixture.pedantic = patched_pedantic  # type: ignore[method-assign,assignment]
