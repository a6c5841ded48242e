"""The zeo storages' pool (storages.zeo.ZEOPool): inside running(), one
runzeo serves a batch of fresh storages, one per trial."""

from __future__ import annotations

import contextlib
import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from persistent.mapping import PersistentMapping

import storages
from storages import StorageError, StorageOptions
from storages import zeo as zeo_module
from storages.bdb import bdbstorage_section
from storages.file import filestorage_section
from storages.zeo import (
    SERVER_FILES,
    ZEOOptions,
    ZEOServer,
    free_port,
    renamed_section,
)
from storages.zeo import factory as zeo_factory
from tests.cli.test_cli import vfab_bench
from tests.conftest import factory_or_skip, runzeo_pids


@contextlib.contextmanager
def within(seconds: int) -> Iterator[None]:
    """Fail, rather than hang, a block that takes more than *seconds*."""

    def expired(signum: int, frame: object) -> None:
        raise AssertionError(f"still running after {seconds} s: hung")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def server_pid(store: Any) -> int:
    return int(store.server.process.pid)


def pool_of(factory: Any) -> Any:
    pool = factory._pool
    assert pool is not None, "no pool: not inside running()"
    return pool


def write(store: Any, key: str, payload: bytes = b"") -> None:
    store.root()[key] = PersistentMapping({"payload": payload})
    store.commit()


# -- renamed_section ---------------------------------------------------------


def test_renamed_section_renames_the_opening_tag_only(tmp_path: Path) -> None:
    section = filestorage_section(tmp_path)
    renamed = renamed_section(section, "7")
    assert renamed.splitlines()[0] == "<filestorage 7>"
    assert renamed.splitlines()[1:] == section.splitlines()[1:]

    bdb = bdbstorage_section(tmp_path / "1", {"cache_size": 1 << 24})
    assert renamed_section(bdb, "12").startswith("<bdbstorage 12>\n")
    assert str(tmp_path / "1") in renamed_section(bdb, "12")  # path untouched

    commented = "# a plugin's comment\n  <zlibstorage 1>\n <filestorage>\n"
    assert "<zlibstorage 2>" in renamed_section(commented, "2")


def test_renamed_section_refuses_a_section_not_named_1() -> None:
    with pytest.raises(StorageError, match="naming its storage 1"):
        renamed_section("<filestorage main>\n  path x\n</filestorage>\n", "2")


@pytest.mark.server
def test_a_server_serves_several_named_storages(
    tmp_path: Path, no_leaked_servers: None
) -> None:
    import ZEO
    import ZODB

    sections = []
    for name in ("1", "2"):
        (tmp_path / name).mkdir()
        sections.append(renamed_section(filestorage_section(tmp_path / name), name))
    with ZEOServer(tmp_path, sections) as server:
        for name in ("1", "2"):
            db = ZODB.DB(ZEO.client(server.address, storage=name))
            with db.transaction() as conn:
                assert "mine" not in conn.root()
                conn.root()["mine"] = name
            db.close()
    for name in ("1", "2"):
        assert (tmp_path / name / "Data.fs").stat().st_size > 0
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_file()) == sorted(
        SERVER_FILES
    )


# -- the pool inside running() -----------------------------------------------


@pytest.mark.server
def test_opens_inside_running_share_one_runzeo(
    tmp_path: Path, no_leaked_servers: None
) -> None:
    before = runzeo_pids()
    factory = storages.get("zeo")
    with factory.running():
        assert runzeo_pids() == before, "running() started runzeo before any open()"
        pids = []
        for _ in range(3):
            with factory.open(tmp_path) as store:
                store.reset()
                write(store, "x")
                pids.append(server_pid(store))
            assert runzeo_pids() - before == {pids[0]}, "closing stopped the server"
        assert pids == [pids[0]] * 3
        assert list(tmp_path.iterdir()) == []  # the data is the pool's


@pytest.mark.server
def test_each_trial_starts_empty_and_counts_its_own_files(
    tmp_path: Path, no_leaked_servers: None
) -> None:
    factory = storages.get("zeo")
    with factory.running():
        with factory.open(tmp_path) as first:
            first.reset()
            write(first, "big", os.urandom(600_000))
            first_size = first.size_bytes()
            assert first_size is not None and first_size > 600_000
        batch = pool_of(factory).batch
        for _ in range(3):
            with factory.open(tmp_path) as store:
                # Nothing of an earlier trial: one object, the root that
                # ZODB.DB made on opening an empty storage.
                assert len(store.db.storage) == 1
                assert list(store.connection.root().keys()) == []
                store.reset()
                assert list(store.root().keys()) == []
                write(store, "small", b"x" * 100)
                size = store.size_bytes()
                assert size is not None and 0 < size < 100_000
        # Each storage its own directory; the first's data still there, its
        # size its Data.fs alone (runzeo's files are beside the storages).
        fs = batch / "1" / "Data.fs"
        assert fs.stat().st_size > 600_000
        assert fs.stat().st_size <= first_size
        # Storages 2 to 4 were the other trials'; 5, not yet used, holds no
        # transaction (a Data.fs of its 4-byte magic only).
        sizes = [(batch / str(i) / "Data.fs").stat().st_size for i in range(2, 6)]
        assert all(4 < n < 100_000 for n in sizes[:3]) and sizes[3] == 4, sizes
        for name in SERVER_FILES:
            assert (batch / name).exists()


@pytest.mark.server
def test_a_used_up_batch_gives_way_to_a_new_server(
    tmp_path: Path, no_leaked_servers: None
) -> None:
    before = runzeo_pids()
    factory = storages.get("zeo")
    with factory.running():
        pool = pool_of(factory)
        seen = []
        for i in range(zeo_module.POOL_SIZE + 1):
            with factory.open(tmp_path) as store:
                store.reset()
                write(store, f"trial {i}")
                seen.append((server_pid(store), pool.batch))
        first_pid, first_batch = seen[0]
        last_pid, last_batch = seen[-1]
        assert {pid for pid, _ in seen[:-1]} == {first_pid}
        assert last_pid != first_pid
        assert runzeo_pids() - before == {last_pid}, "the old server still runs"
        assert not first_batch.exists(), "the old batch's directory is left"
        assert last_batch.parent == first_batch.parent
        assert (last_batch / "1" / "Data.fs").exists()


@pytest.mark.server
def test_a_batch_past_its_disk_limit_gives_way(
    tmp_path: Path, no_leaked_servers: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """... and the next batch's server listens on the --zeo-port named."""
    # ZEOFactory.running() reads it from the module it is defined in.
    monkeypatch.setattr(zeo_factory, "POOL_DISK_BYTES", 1)
    port = free_port()
    factory = storages.get("zeo", StorageOptions(ZEOOptions(zeo_port=port)))
    with factory.running():
        pids = []
        for _ in range(2):
            with factory.open(tmp_path) as store:
                store.reset()
                write(store, "x")
                pids.append(server_pid(store))
                assert store.server.address == ("127.0.0.1", port)
    assert pids[0] != pids[1]


@pytest.mark.server
@pytest.mark.parametrize("how", ["normally", "through an exception"])
def test_leaving_running_stops_the_server_and_removes_the_pool(
    tmp_path: Path, how: str
) -> None:
    before = runzeo_pids()
    factory = storages.get("zeo")
    with contextlib.suppress(RuntimeError):
        with factory.running():
            with factory.open(tmp_path) as store:
                store.reset()
                pid = server_pid(store)
                pool_dir = pool_of(factory).directory
                if how != "normally":
                    raise RuntimeError("a trial broke")
    assert pool_dir is not None and pool_dir.name.startswith("vfab-zeo-pool-")
    assert not pool_dir.exists()
    assert pid not in runzeo_pids()
    assert runzeo_pids() <= before
    assert factory._pool is None


@pytest.mark.server
def test_a_killed_server_is_diagnosed_and_replaced(
    tmp_path: Path, no_leaked_servers: None
) -> None:
    factory = storages.get("zeo")
    with within(60), factory.running():
        with factory.open(tmp_path) as store:
            store.reset()
            write(store, "x")
            victim = server_pid(store)
            os.kill(victim, signal.SIGKILL)
            assert store.diagnose() == "runzeo was killed by SIGKILL"
            with pytest.raises(Exception):  # noqa: B017 - any client error
                write(store, "y")
        # The next trial does not wait on the dead server: a new one serves.
        with factory.open(tmp_path) as store:
            assert server_pid(store) != victim
            assert store.diagnose() is None
            store.reset()
            write(store, "z")
            assert list(store.root().keys()) == ["z"]


@pytest.mark.server
def test_pack_packs_the_trials_storage_only(
    tmp_path: Path, no_leaked_servers: None
) -> None:
    factory = storages.get("zeo")
    with factory.running():
        for i in range(2):
            with factory.open(tmp_path) as store:
                store.reset()
                write(store, "x", b"old" * 10_000)
                write(store, "x", b"new")  # the old revision: packed away
                if i == 1:
                    before = store.size_bytes()
                    store.pack()
                    assert (store.size_bytes() or 0) < (before or 0)
        batch = pool_of(factory).batch
        assert not (batch / "1" / "Data.fs.old").exists()
        assert (batch / "2" / "Data.fs.old").exists()


@pytest.mark.server
def test_zeo_bdb_works_in_a_pool(tmp_path: Path, no_leaked_servers: None) -> None:
    factory = factory_or_skip("zeo+bdb")
    with factory.running():
        pids = []
        for i in range(2):
            with factory.open(tmp_path) as store:
                assert list(store.connection.root().keys()) == []
                store.reset()
                write(store, f"trial {i}", b"x" * 1000)
                store.reopen()
                assert list(store.root().keys()) == [f"trial {i}"]
                assert (store.size_bytes() or 0) > 0
                store.pack()
                pids.append(server_pid(store))
        assert pids[0] == pids[1]
        batch = pool_of(factory).batch
        assert (batch / "1" / "bdb" / "zodb.db").exists()
        assert (batch / "2" / "bdb" / "zodb.db").exists()


# -- outside running(), and with --zeo-address: as before ----------------------


@pytest.mark.server
def test_outside_running_each_open_has_its_own_server_and_keeps_its_directory(
    tmp_path: Path, no_leaked_servers: None
) -> None:
    factory = storages.get("zeo")
    with factory.open(tmp_path) as store:
        store.reset()
        write(store, "kept")
        first = server_pid(store)
    assert first not in runzeo_pids()
    assert (tmp_path / "Data.fs").exists() and (tmp_path / "zeo.conf").exists()
    with factory.open(tmp_path) as store:
        assert server_pid(store) != first
        assert "kept" in store.root()


@pytest.mark.server
def test_with_a_zeo_address_running_starts_nothing(
    tmp_path: Path, no_leaked_servers: None
) -> None:
    (tmp_path / "theirs").mkdir()
    with ZEOServer(tmp_path / "theirs", filestorage_section(tmp_path / "theirs")) as s:
        before = runzeo_pids()
        factory = storages.get("zeo", StorageOptions(ZEOOptions(zeo_address=s.address)))
        with factory.running():
            assert factory._pool is None
            with factory.open(tmp_path) as store:
                store.reset()
                write(store, "x")
                assert store.server is None
            assert runzeo_pids() == before


# -- a whole run -------------------------------------------------------------------


@pytest.mark.server
@pytest.mark.subprocess
def test_a_run_on_zeo_and_zeo_bdb(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_leaked_servers: None
) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    out = tmp_path / "run.json"
    proc = vfab_bench(
        "run",
        "--storage",
        "zeo,zeo+bdb",
        "--repeat",
        "2",
        "--warmups",
        "0",
        "--json",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    trials = json.loads(out.read_text())["trials"]
    ran = {t["storage"] for t in trials}
    bdb_reason = storages.get("zeo+bdb").unavailable()
    assert ran == ({"zeo"} if bdb_reason else {"zeo", "zeo+bdb"})
    for t in trials:
        assert t["size_bytes"] > 100_000
        assert t["stats"]["server"]["commits"] >= 4
    assert list(scratch.iterdir()) == []  # the pool's directory removed
