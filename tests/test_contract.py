"""The storage contract seen from outside: running() around a storage's
trials, and a storage another package installs through the entry point
group vfab_loadtest.storages."""

from __future__ import annotations

import contextlib
import json
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import storages
from scenarios.bench import runner
from scenarios.bench.config import RunConfig
from scenarios.sweep import config as sweep_config
from scenarios.sweep import runner as sweep_runner
from storages.mapping import MappingFactory
from tests.test_cli import vfab_bench


class CountingFactory(MappingFactory):
    """A mapping storage that logs running() and each opened store."""

    name = "counted"
    events: list[str] = []

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        self.events.append("enter")
        try:
            yield
        finally:
            self.events.append("exit")

    def open(self, directory: Path) -> Any:
        self.events.append("trial")
        return super().open(directory)


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    events: list[str] = []
    monkeypatch.setattr(CountingFactory, "events", events)
    monkeypatch.setitem(storages.REGISTRY, CountingFactory.name, CountingFactory)
    return events


def test_running_is_entered_once_around_every_trial(counted: list[str]) -> None:
    runner.run(RunConfig(storages=("counted",), repeat=2, warmups=1))
    assert counted == ["enter", "trial", "trial", "trial", "exit"]


def test_running_is_left_when_a_trial_fails(
    counted: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = runner.run_trial

    def interrupted_second(*args: Any, **kwargs: Any) -> Any:
        if counted.count("trial") == 1:
            counted.append("trial")
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(runner, "run_trial", interrupted_second)
    with pytest.raises(KeyboardInterrupt):
        runner.run(RunConfig(storages=("counted",), repeat=3, warmups=0))
    assert counted == ["enter", "trial", "trial", "exit"]


def test_sweep_enters_running_once_per_storage(counted: list[str]) -> None:
    config = sweep_config.SweepConfig(
        storages=("counted",),
        objects=(10, 20),
        variants=tuple(sweep_config.VARIANTS)[:1],
        repeat=2,
        warmups=1,
    )
    sweep_runner.run(config)
    assert counted[0] == "enter" and counted[-1] == "exit"
    assert counted[1:-1] == ["trial"] * 5


# -- a storage from an entry point ------------------------------------------

PLUGIN = '''
"""A storage of another package: ZODB's MappingStorage, its own factory."""
from pathlib import Path

from storages.base import StorageFactory, Store, ZODBStore


class TinyFactory(StorageFactory):
    name = "tiny"
    description = "tiny: a MappingStorage from an installed package"

    def open(self, directory: Path) -> Store:
        from ZODB.MappingStorage import MappingStorage

        storage = MappingStorage()

        def same() -> MappingStorage:
            storage._opened = True  # reopen keeps the data (see mapping.py)
            return storage

        return ZODBStore(self.name, same, self.options)
'''


def install(site: Path, dist: str, entry_points: str) -> None:
    """What pip writes for a package declaring *entry_points*."""
    info = site / f"{dist}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n"
    )
    (info / "entry_points.txt").write_text(
        "[vfab_loadtest.storages]\n" + textwrap.dedent(entry_points)
    )


def plugin_bench(site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return vfab_bench(*args, cwd=site, path=(site,))


def test_a_storage_installed_with_an_entry_point_runs(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "tinystore.py").write_text(PLUGIN)
    install(site, "tinystore", "tiny = tinystore:TinyFactory\n")
    install(site, "brokenstore", "broken = no_such_module:Factory\n")

    listed = plugin_bench(site, "storages")
    assert listed.returncode == 0, listed.stderr
    lines = {line.split()[0]: line for line in listed.stdout.splitlines()}
    assert "MappingStorage from an installed package" in lines["tiny"]
    assert "unavailable" not in lines["tiny"]
    assert "unavailable: entry point 'no_such_module:Factory' failed" in lines["broken"]
    assert "ModuleNotFoundError" in lines["broken"]

    out = tmp_path / "run.json"
    ran = plugin_bench(
        site, "run", "--storage", "tiny", "--preset", "quick", "-q", "--json", str(out)
    )
    assert ran.returncode == 0, ran.stderr
    assert "tiny" in ran.stdout
    assert json.loads(out.read_text())["metadata"]["config"]["storages"] == ["tiny"]

    broken = plugin_bench(site, "run", "--storage", "broken", "--preset", "quick")
    assert broken.returncode == 2
    assert "storage 'broken' is not available" in broken.stderr
    assert len(broken.stderr.strip().splitlines()) == 1
