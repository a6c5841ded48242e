"""The benchmark suite's command-line options, its --benchmark-disable rule,
and its tier rule (a storage named on the command line runs whatever its
tier: a server's benchmarks are marked `server`, which a plain run leaves out).

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
from pathlib import Path

import pytest

import storages
from storages import StorageOptions
from storages.configured import ConfiguredOptions
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
        "--storage-config",
        dest="vfab_storage_config",
        metavar="FILE",
        help="also run on each <zodb NAME> of this ZODB ZConfig file (a test "
        "id NAME); the suite writes below its own key and removes it",
    )
    group.addoption(
        "--storage-uri",
        action="append",
        dest="vfab_storage_uri",
        metavar="[NAME=]URI",
        help="also run on the database a zodburi URI names (test id NAME, "
        "or the URI); repeatable",
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


def storage_options(config: pytest.Config) -> StorageOptions:
    """The options the benchmarks' stores open with: the databases
    --storage-config and --storage-uri name (their columns)."""
    path = config.getoption("vfab_storage_config")
    return StorageOptions(
        ConfiguredOptions(
            storage_config=Path(path) if path else None,
            storage_uri=tuple(config.getoption("vfab_storage_uri") or ()),
        )
    )


def selected_storages(config: pytest.Config) -> list[str]:
    """The --storage names in the order given, each once, then the columns
    of --storage-config and --storage-uri (DEFAULT_STORAGES when there are
    none of either).  Bad input is a usage error."""
    try:
        columns = list(storages.configured_columns(storage_options(config)))
    except storages.StorageError as e:
        raise pytest.UsageError(str(e)) from None
    names = config.getoption("vfab_storages") or []
    names += columns
    return list(dict.fromkeys(names or DEFAULT_STORAGES))


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


def run_the_storages_named(config: pytest.Config) -> None:
    """A storage named with --storage, --storage-config or --storage-uri is
    asked for: run its benchmarks whatever tier they are in (a server's are
    marked `server`, which a plain run leaves out), as --all would."""
    named = config.getoption("vfab_storages") or config.getoption("vfab_storage_config")
    if named or config.getoption("vfab_storage_uri"):
        config.option.vfab_all = True
