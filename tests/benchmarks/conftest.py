"""Fixtures of the benchmark tests: one test per storage named with --storage.

A test that takes the argument ``storage`` runs once per selected storage
(ids are the storage names, so --benchmark-group-by=group,param:storage sets
storages side by side); a storage whose factory says it is unavailable here,
or that is planned but not in this checkout, is skipped with the reason.
``store`` opens that storage in a temporary directory for one test and closes
it (stopping any server it started) however the test ends.

Fixture names avoid 'session' and 'fastsession' (locust's pytest plugin).
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import storages
from scenarios.results.metadata import versions
from storages import StorageOptions, Store
from tests.benchmarks.options import measuring, selected_storages, storage_options
from vfab.generate import DataSpec


def _storage_param(name: str, options: storages.StorageOptions) -> object:
    factory = storages.get(name, options)
    marks = [pytest.mark.server] if factory.starts_server else []
    why = factory.unavailable()
    if why is not None:
        marks.append(pytest.mark.skip(reason=f"{name} unavailable here: {why}"))
    return pytest.param(name, id=name, marks=marks)


#: A module that compares one storage with another, by the storage it needs.
PAIRED = {"test_bdb_vs_file.py": "bdb"}


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """A measuring run (tox -e zeo) leaves out the comparison of a storage
    it did not select: not collected, so not skipped for a module it never
    needed ("No module named 'berkeleydb'" in a zeo run)."""
    needs = PAIRED.get(collection_path.name)
    if needs is None or not measuring(config):
        return None
    return needs not in selected_storages(config) or None


@pytest.hookimpl(wrapper=True)
def pytest_report_header(config: pytest.Config) -> Iterator[None]:
    """A measuring run says what it measures, not "tier: all" (--all there
    only lets a storage start its server)."""
    lines = yield
    if not measuring(config):
        return lines
    names = ", ".join(selected_storages(config))
    said = (
        f"benchmarks: every phase and micro-benchmark on {names}, measured "
        "(servers a storage needs are started)"
    )
    out = []
    for line in lines:
        if isinstance(line, list):
            line = [said if item == "tier: all" else item for item in line]
        elif line == "tier: all":
            line = said
        out.append(line)
    return out


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "storage" in metafunc.fixturenames:
        names = selected_storages(metafunc.config)
        options = storage_options(metafunc.config)
        metafunc.parametrize("storage", [_storage_param(n, options) for n in names])


@pytest.fixture
def size(request: pytest.FixtureRequest) -> str:
    """The --size name (small unless given)."""
    return str(request.config.getoption("vfab_size"))


@pytest.fixture
def spec(size: str) -> DataSpec:
    return DataSpec.for_size(size)


@pytest.fixture(scope="session")
def running_factories(
    request: pytest.FixtureRequest,
) -> Iterator[dict[str, storages.StorageFactory]]:
    """Each storage's factory (with the options --storage-config and
    --storage-uri give), its running() entered on first use and left at the
    end of the session (a RelStorage's database server is started once, not
    per benchmark)."""
    with contextlib.ExitStack() as stack:
        yield _Factories(stack, storage_options(request.config))


class _Factories(dict):  # type: ignore[type-arg]
    def __init__(self, stack: contextlib.ExitStack, options: StorageOptions) -> None:
        super().__init__()
        self.stack = stack
        self.options = options

    def __missing__(self, name: str) -> storages.StorageFactory:
        factory = storages.get(name, self.options)
        self.stack.enter_context(factory.running())
        self[name] = factory
        return factory


@pytest.fixture
def store(
    storage: str, running_factories: dict[str, storages.StorageFactory]
) -> Iterator[Store]:
    """*storage* opened in a fresh temporary directory for this test, closed
    (and its server stopped) on success, failure and interrupt alike.  On a
    database --storage-config or --storage-uri names, the test writes below
    its own key, removed when it closes."""
    with tempfile.TemporaryDirectory(prefix="vfab-bench-") as tmp:
        with running_factories[storage].open(Path(tmp)) as opened:
            yield opened


def pytest_benchmark_update_json(
    config: pytest.Config, benchmarks: list[object], output_json: dict[str, object]
) -> None:
    """Record the versions that decide the numbers (ZODB, ZEO, persistent,
    BTrees...) in every JSON written or saved, so that a comparison between
    two saved runs says which ZODB each one measured."""
    output_json["versions"] = versions()
