"""The benchmark suite's command-line options and its --benchmark-disable rule.

pytest reads options only from plugins and *initial* conftest files, and
tests/benchmarks/conftest.py is not initial when a user types a bare
``pytest``; so tests/conftest.py calls the two hooks here.

--benchmark-disable is in pyproject's addopts: a normal test run executes
every benchmark once, as a correctness test.  pytest-benchmark refuses
--benchmark-only together with --benchmark-disable, and with benchmarks
disabled --benchmark-json, --benchmark-autosave and --benchmark-compare have
nothing to write or compare.  So asking for any of those on the command line
turns benchmarking back on (pytest-benchmark's own --benchmark-enable does
the same by hand); typing --benchmark-disable yourself still wins.
"""

from __future__ import annotations

import os

import pytest

import storages
from vfab.generate import SIZES

#: What --storage runs when not given: the storages that need no server.
DEFAULT_STORAGES: tuple[str, ...] = ("memory", "mapping", "file")

#: pytest-benchmark options (dest names) that only make sense when
#: benchmarks are measured.
MEASURING_OPTIONS: tuple[str, ...] = (
    "benchmark_only",
    "benchmark_json",
    "benchmark_save",
    "benchmark_autosave",
    "benchmark_save_data",
    "benchmark_compare",
    "benchmark_compare_fail",
    "benchmark_histogram",
    "benchmark_cprofile",
)


def storage_choices() -> list[str]:
    return list(storages.REGISTRY)


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("vfab", "vfab-loadtest benchmarks (tests/benchmarks)")
    group.addoption(
        "--storage",
        action="append",
        dest="vfab_storages",
        choices=storage_choices(),
        metavar="NAME",
        help="run the benchmarks on this storage; repeat for several "
        f"(choices: {', '.join(storage_choices())}; "
        f"default: {', '.join(DEFAULT_STORAGES)})",
    )
    group.addoption(
        "--size",
        dest="vfab_size",
        choices=list(SIZES),
        default="small",
        metavar="SIZE",
        help=f"data set size for the benchmarks (choices: {', '.join(SIZES)}; "
        "default: small, the 2000 data set)",
    )


def selected_storages(config: pytest.Config) -> list[str]:
    """The --storage names in the order given, each once."""
    names = config.getoption("vfab_storages") or list(DEFAULT_STORAGES)
    return list(dict.fromkeys(names))


def measuring(config: pytest.Config) -> bool:
    """True when this run times benchmarks (not the normal run, which runs
    each one once as a test)."""
    opt = config.option
    return bool(getattr(opt, "benchmark_enable", False)) or not getattr(
        opt, "benchmark_disable", False
    )


def enable_benchmarks_when_asked(config: pytest.Config) -> None:
    """Undo the ini file's --benchmark-disable when the command line asks for
    measurements.  Runs before pytest-benchmark reads its options."""
    opt = config.option
    if not getattr(opt, "benchmark_disable", False):
        return
    typed = list(config.invocation_params.args)
    typed += os.environ.get("PYTEST_ADDOPTS", "").split()
    if "--benchmark-disable" in typed:
        return
    if any(getattr(opt, name, None) for name in MEASURING_OPTIONS):
        opt.benchmark_enable = True
