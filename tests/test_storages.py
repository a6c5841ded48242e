"""One contract every registered storage passes, and the ZEO server's life."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from persistent.mapping import PersistentMapping

import storages
from storages import StorageError, StorageOptions
from storages.file import filestorage_section
from storages.zeo import ZEOOptions, ZEOServer, free_port
from tests.conftest import factory_or_skip, runzeo_pids, storage_params

#: zlib+NAME over the other storages that wrap, beside the registered ones.
ZLIB_OVER = ["zlib+mapping", "zlib+bdb"]


@pytest.mark.parametrize("name", storage_params([*storages.REGISTRY, *ZLIB_OVER]))
def test_contract(name: str, tmp_path: Path, no_leaked_servers: None) -> None:
    """Write, read back, reopen (cold cache), close; reopen where it persists;
    all inside running(), as the runner holds it."""
    factory = factory_or_skip(name)
    with factory.running():
        check_contract(factory, name, tmp_path)


def check_contract(factory: storages.StorageFactory, name: str, tmp_path: Path) -> None:
    with factory.open(tmp_path) as store:
        store.reset()
        root = store.root()
        root["thing"] = PersistentMapping({"answer": 42})
        store.commit()
        assert store.root()["thing"]["answer"] == 42
        root["thing"]["answer"] = 43
        store.abort()
        expected = 42 if name != "memory" else 43  # memory cannot roll back
        assert store.root()["thing"]["answer"] == expected
        store.reopen()
        assert store.root()["thing"]["answer"] == expected
        counts = store.transfer_counts()
        if name == "memory":
            assert counts is None
        else:
            assert counts is not None and counts[0] >= 1
            assert (store.size_bytes() or 0) > 0
    if factory.keeps_directory:
        with factory.open(tmp_path) as store:
            assert store.root()["thing"]["answer"] == 42


def test_unknown_storage_lists_the_valid_ones() -> None:
    with pytest.raises(StorageError, match="choose from memory, mapping, file"):
        storages.get("oracle")


@pytest.mark.server
def test_zeo_server_stops_on_close_and_on_error(
    tmp_path: Path, no_leaked_servers: None
) -> None:
    factory = storages.get("zeo")
    (tmp_path / "a").mkdir()
    with factory.open(tmp_path / "a") as store:
        pid = store.server.process.pid  # type: ignore[attr-defined, union-attr]
        assert pid in runzeo_pids()
    assert pid not in runzeo_pids()

    (tmp_path / "b").mkdir()
    with pytest.raises(RuntimeError, match="boom"):
        with factory.open(tmp_path / "b") as store:
            pid = store.server.process.pid  # type: ignore[attr-defined, union-attr]
            raise RuntimeError("boom")
    assert pid not in runzeo_pids()


@pytest.mark.server
def test_runzeo_finds_this_project(tmp_path: Path, no_leaked_servers: None) -> None:
    """runzeo's PYTHONPATH starts with the directory holding storages/ (whose
    modules a served section may %import, like storages.bdb), not with one
    of its subdirectories: ZEOServer works it out from its own module's
    path, one package deeper since storages.zeo became a package."""
    project = Path(storages.__file__).resolve().parent.parent
    with ZEOServer(tmp_path, filestorage_section(tmp_path)) as server:
        assert server.process is not None
        environ = Path(f"/proc/{server.process.pid}/environ").read_bytes()
    variables = dict(v.split(b"=", 1) for v in environ.split(b"\0") if b"=" in v)
    first = variables[b"PYTHONPATH"].decode().split(os.pathsep)[0]
    assert Path(first) == project
    assert (Path(first) / "storages" / "zeo" / "__init__.py").is_file()


def test_zeo_port_in_use_is_a_clear_error(
    tmp_path: Path, busy_port: int, no_leaked_servers: None
) -> None:
    port = busy_port
    factory = storages.get("zeo", StorageOptions(ZEOOptions(zeo_port=port)))
    with pytest.raises(
        StorageError, match=f"port {port} on 127.0.0.1 is already in use"
    ):
        factory.open(tmp_path)


def test_zeo_unreachable_address_is_a_clear_error(tmp_path: Path) -> None:
    port = free_port()
    factory = storages.get(
        "zeo", StorageOptions(ZEOOptions(zeo_address=("127.0.0.1", port)))
    )
    with pytest.raises(StorageError, match="cannot reach ZEO server"):
        factory.open(tmp_path)


@pytest.mark.server
def test_existing_server_keeps_foreign_data(
    tmp_path: Path, no_leaked_servers: None
) -> None:
    """With --zeo-address the suite writes under its own key only."""
    import transaction
    import ZEO
    import ZODB

    with ZEOServer(tmp_path, filestorage_section(tmp_path)) as server:
        db = ZODB.DB(ZEO.client(server.address))
        with db.transaction() as conn:
            conn.root()["theirs"] = PersistentMapping({"keep": True})
        factory = storages.get(
            "zeo", StorageOptions(ZEOOptions(zeo_address=server.address))
        )
        (tmp_path / "client").mkdir()
        with factory.open(tmp_path / "client") as store:
            store.reset()
            store.root()["x"] = 1
            store.commit()
            store.reset()
        db.close()
        db = ZODB.DB(ZEO.client(server.address))
        conn = db.open(transaction.TransactionManager())
        assert conn.root()["theirs"]["keep"] is True
        assert set(conn.root().keys()) == {"theirs", storages.ROOT_KEY}
        conn.close()
        db.close()


def test_locked_filestorage_is_a_clear_error(tmp_path: Path) -> None:
    factory = storages.get("file")
    with factory.open(tmp_path):
        with pytest.raises(StorageError, match="locked"):
            factory.open(tmp_path)


def test_corrupt_filestorage_is_a_clear_error(tmp_path: Path) -> None:
    data = tmp_path / "Data.fs"
    data.write_bytes(b"this is not a FileStorage")
    with pytest.raises(StorageError, match="not a usable FileStorage"):
        storages.get("file").open(tmp_path)
    assert data.read_bytes() == b"this is not a FileStorage"


@pytest.mark.parametrize("name", ["file", "bdb", "relstorage-sqlite"])
def test_each_storage_names_its_own_files(name: str, tmp_path: Path) -> None:
    """registry.file_kind(): every file a storage's open() leaves is named
    as that storage's by the storage itself (an output is never written
    over one); a file of no storage is not."""
    factory = factory_or_skip(name)
    with factory.open(tmp_path) as store:
        store.root()["x"] = PersistentMapping(v=1)
        store.commit()
    kinds = {
        p.name: storages.registry.file_kind(p)
        for p in tmp_path.rglob("*")
        if p.is_file() and p.stat().st_size
    }
    databases = {n for n, kind in kinds.items() if kind is not None}
    assert databases, kinds
    expected = {
        "file": {"Data.fs", "Data.fs.index"},
        "bdb": {"zodb.db"},
        "relstorage-sqlite": {"main.sqlite3"},
    }[name]
    assert expected <= databases, kinds
    plain = tmp_path / "notes.txt"
    plain.write_text("not a database, 16 bytes or more\n")
    assert storages.registry.file_kind(plain) is None
    assert storages.registry.file_kind(tmp_path / "missing") is None
