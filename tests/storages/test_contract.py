"""The storage contract seen from outside: running() around a storage's
trials, a storage another package installs through the entry point group
vfab_loadtest.storages, and the servers storages start (kill, restart)."""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import textwrap
import time
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import storages
from scenarios.bench import runner
from scenarios.bench.config import RunConfig
from scenarios.load.target import open_target
from scenarios.outputs import command_inputs
from scenarios.sweep import config as sweep_config
from scenarios.sweep import runner as sweep_runner
from storages.base import StorageFactory
from storages.mapping import MappingFactory
from tests.cli.test_cli import vfab_bench
from tests.storages.relstorage.conftest import process_tree
from tests.storages.test_composites import snapshot
from tests.support.cli_helpers import assert_bad_input, run_cli


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


def test_running_is_entered_once_around_every_trial(
    counted: list[str], frozen_heap: None
) -> None:
    runner.run(RunConfig(storages=("counted",), repeat=2, warmups=1, budget_s=0))
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
        runner.run(RunConfig(storages=("counted",), repeat=3, warmups=0, budget_s=0))
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

from storages.base import StorageFactory, Store
from storages.zodbstore import ZODBStore


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


@pytest.mark.subprocess
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


# -- servers the suite starts: kill (a crash) and restart -----------------------

SERVING = [
    name
    for name, factory in storages.REGISTRY.items()
    if factory.shared and factory.starts_server
]


def living(pids: set[int], timeout: float = 20.0) -> set[int]:
    """Those of *pids* (and their descendants) still running after at most
    *timeout* seconds; a zombie, which runs nothing, is not counted."""

    def running(pid: int) -> bool:
        try:
            with open(f"/proc/{pid}/stat") as f:
                return f.read().rpartition(")")[2].split()[0] != "Z"
        except OSError:
            return False

    deadline = time.monotonic() + timeout
    left = {p for p in process_tree(pids) if running(p)}
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = {p for p in process_tree(pids) if running(p)}
    return left


@pytest.mark.server
@pytest.mark.parametrize("name", SERVING)
def test_a_server_the_suite_starts_is_killed_and_restarted_on_its_data(
    name: str, tmp_path: Path
) -> None:
    """share() of a storage that starts its server (runzeo, PostgreSQL,
    MariaDB: storages.process's life cycle): kill_server() leaves no
    process of it running, restart_server() serves the committed data again
    at the same client address, and leaving the block stops it."""
    factory = storages.get(name)
    reason = factory.unavailable()
    if reason:
        pytest.skip(f"{name}: {reason}")
    with factory.share(tmp_path) as shared:
        assert shared.can_kill and shared.server_running
        db = open_target(shared.client)
        try:
            with db.transaction() as conn:
                conn.root()["kept"] = "before the crash"
        finally:
            db.close()
        pids = process_tree(set(shared.server_pids()))
        assert pids
        shared.kill_server()
        assert not shared.server_running
        assert not living(pids)
        shared.restart_server()
        assert shared.server_running
        db = open_target(shared.client)
        try:
            with db.transaction() as conn:
                assert conn.root()["kept"] == "before the crash"
        finally:
            db.close()
        pids = process_tree(set(shared.server_pids()))
    assert not shared.server_running
    assert not living(pids)


# -- docs/storages.md's walkthrough, followed -----------------------------------

DOC = Path(__file__).resolve().parents[2] / "docs" / "storages.md"


def walkthrough_module() -> str:
    """The whole storage module docs/storages.md's walkthrough shows."""
    text = DOC.read_text()
    section = text[text.index("## Walkthrough: a storage with files") :]
    return section.split("```python\n", 1)[1].split("\n```", 1)[0]


@pytest.fixture
def foo(monkeypatch: pytest.MonkeyPatch) -> type[StorageFactory]:
    """The walkthrough's storages/foo.py as written there, on a backend
    ``foo`` that is FileStorage under another name, and its one
    registration (a registry entry, as BUILT_IN's line makes)."""
    from ZODB.FileStorage import FileStorage

    from storages.file import check_filestorage

    backend = types.ModuleType("foo")
    backend.FooStorage = FileStorage  # type: ignore[attr-defined]
    backend.check_foo = lambda path: check_filestorage(Path(path))  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "foo", backend)
    module = types.ModuleType("storages_foo")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compile(walkthrough_module(), str(DOC), "exec"), module.__dict__)
    factory: type[StorageFactory] = module.FooFactory
    monkeypatch.setitem(storages.REGISTRY, factory.name, factory)
    return factory


def test_the_walkthroughs_storage_reaches_every_command_through_the_registry(
    foo: type[StorageFactory], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """What docs/storages.md promises of a storage with files and a URI
    scheme, given its module and one registration: run, populate, census
    (by URI and by --path, read-only, nothing written), --target, the
    check of its database before anything opens it, and its file kept
    safe from an output."""
    data = tmp_path / "data"
    ran = run_cli(capsys, "run", "--storage", "foo", "--preset", "quick", "-q")
    assert ran.status == 0, ran
    made = run_cli(capsys, "populate", "--storage", "foo", "--path", str(data), "-q")
    assert made.status == 0, made
    db = data / "foo.db"
    assert db.is_file()
    for scratch in data.glob("foo.db.*"):  # FileStorage's index and lock
        scratch.unlink()
    before = snapshot(data)
    for args in (["census", f"foo://{db}"], ["census", "--path", str(data)]):
        census = run_cli(capsys, *args)
        assert census.status == 0, census
        assert "vfab.model" in census.out
        assert snapshot(data) == before, args
    target = open_target(f"foo://{db}")
    try:
        with target.transaction() as conn:
            assert "vfab-loadtest" in conn.root()
    finally:
        target.close()
    # An output never replaces it: foo:// names a local file (URIScheme.local),
    # and a file the storage says is one of its databases (file_kind).
    assert db in command_inputs(argparse.Namespace(uri=f"foo://{db}", outputs=()))
    other = tmp_path / "other.foo"
    other.write_bytes(b"FOO1" + bytes(60))
    assert_bad_input(
        run_cli(capsys, "census", f"foo://{db}", "--json", str(other), "--force"),
        "is a Foo database",
    )
    assert other.read_bytes() == b"FOO1" + bytes(60)


def test_the_walkthroughs_storage_refuses_its_damaged_database(
    foo: type[StorageFactory], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    made = run_cli(capsys, "populate", "--storage", "foo", "--path", str(data), "-q")
    assert made.status == 0, made
    db = data / "foo.db"
    whole = bytearray(db.read_bytes())
    whole[len(whole) // 2 : len(whole) // 2 + 8] = b"\xff" * 8  # mid-file
    db.write_bytes(bytes(whole))
    before = snapshot(data)
    for args in (
        ["census", f"foo://{db}"],
        ["census", "--path", str(data)],
        ["populate", "--storage", "foo", "--path", str(data), "--overwrite"],
        ["run", "--storage-uri", f"theirs=foo://{db}", "--preset", "quick", "-q"],
    ):
        assert_bad_input(run_cli(capsys, *args), "damaged")
        assert snapshot(data) == before, args
