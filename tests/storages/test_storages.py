"""One contract every registered storage passes, and the ZEO server's life."""

from __future__ import annotations

import os
import struct
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


@pytest.mark.parametrize("module", ["storages", "storages.base", "storages.bdb"])
def test_packages_import_their_names_plainly(module: str) -> None:
    """No module-level __getattr__ loading names on first use: mypy, ruff
    and a reader see every name where it is imported (issue 27)."""
    import importlib

    loaded = importlib.import_module(module)
    assert "__getattr__" not in vars(loaded)
    for name in getattr(loaded, "__all__", ()):
        assert name in vars(loaded), name


# -- signals: the CLI's synchronizer on every store's transaction manager -------


def test_a_signal_during_a_commit_is_raised_once_the_storage_has_finished(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGINT landing inside two-phase commit (here in FileStorage's
    tpc_vote) is held by the CLI's synchronizer until tpc_finish returned,
    then raised; the commit is whole.  Any commit on the store's transaction
    manager, not only Store.commit()."""
    import signal

    from ZODB.FileStorage import FileStorage

    from scenarios import interrupts

    armed: list[bool] = []
    finished: list[bool] = []
    vote, finish = FileStorage.tpc_vote, FileStorage.tpc_finish

    def interrupted_vote(self: FileStorage, transaction: object) -> object:
        if armed:
            os.kill(os.getpid(), signal.SIGINT)  # the handler runs in here
        return vote(self, transaction)

    def recorded_finish(self: FileStorage, *args: object) -> object:
        result = finish(self, *args)
        finished.append(bool(armed))
        return result

    # Patched before the store opens: ZODB's adapter copies the methods.
    monkeypatch.setattr(FileStorage, "tpc_vote", interrupted_vote)
    monkeypatch.setattr(FileStorage, "tpc_finish", recorded_finish)
    interrupts.defer_interrupts()
    try:
        store = storages.get("file").open(tmp_path)
        store.root()["kept"] = "before"
        store.commit()
        armed.append(True)
        store.root()["kept"] = "committed"
        with pytest.raises(KeyboardInterrupt):
            store.transaction_manager.commit()
        assert finished[-1] is True
        armed.clear()
        store.close()
    finally:
        interrupts.forget_interrupts()
    with storages.get("file").open(tmp_path) as again:
        assert again.root()["kept"] == "committed"


def test_a_signal_during_an_abort_is_raised_once_it_has_finished(
    tmp_path: Path,
) -> None:
    """An abort is a critical section too (ZEO's tpc_abort, RelStorage's
    rollback): the signal comes after it, the changes are gone."""
    import signal

    from scenarios import interrupts

    interrupts.defer_interrupts()
    try:
        store = storages.get("file").open(tmp_path)
        store.root()["kept"] = "before"
        store.commit()
        store.root()["kept"] = "aborted"

        class Interrupting:
            def newTransaction(self, transaction: object) -> None:
                pass

            def beforeCompletion(self, transaction: object) -> None:
                os.kill(os.getpid(), signal.SIGINT)  # inside the abort

            def afterCompletion(self, transaction: object) -> None:
                pass

        interrupting = Interrupting()
        store.transaction_manager.registerSynch(interrupting)
        with pytest.raises(KeyboardInterrupt):
            store.abort()
        store.transaction_manager.unregisterSynch(interrupting)
        assert store.root()["kept"] == "before"
        store.close()
    finally:
        interrupts.forget_interrupts()


def test_a_ctrl_c_a_close_swallows_is_raised_again_by_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """FileStorage.close() catches everything around saving its index
    (logging it): the store raises the interrupt again once closed, with
    or without the CLI's handlers."""
    import ZODB.fsIndex

    store = storages.get("file").open(tmp_path)
    store.root()["x"] = 1
    store.commit()

    def interrupted_save(self: object, pos: int, fname: str) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(ZODB.fsIndex.fsIndex, "save", interrupted_save)
    with pytest.raises(KeyboardInterrupt):
        store.close()
    assert store.db is None  # closed all the same


# -- the FileStorage check: ZODB's fstest, then what fstest leaves out -----------

TXN = struct.Struct(">8sQcHHH")


@pytest.fixture(scope="module")
def small_fs(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """A Data.fs of five transactions: the root's, then four of two records."""
    directory = tmp_path_factory.mktemp("fs")
    with storages.get("file").open(directory) as store:
        root = store.root()
        for i in range(4):
            root[f"n{i}"] = PersistentMapping(value="x" * 200)
            store.commit()
    return (directory / "Data.fs").read_bytes()


def _last_transaction(data: bytes) -> tuple[int, int, int]:
    """(its offset, its length with the repeated length, its first record)."""
    pos = 4
    while True:
        tlen = TXN.unpack_from(data, pos)[1]
        if pos + tlen + 8 == len(data):
            _, _, _, ulen, dlen, elen = TXN.unpack_from(data, pos)
            return pos, tlen + 8, pos + TXN.size + ulen + dlen + elen
        pos += tlen + 8


def _damaged(data: bytes, how: str) -> bytes:
    last, length, record = _last_transaction(data)
    blob = bytearray(data)
    at = {
        "a record's tid": (record + 8, b"\x01" * 8),
        "a record's transaction position": (record + 24, struct.pack(">Q", 4)),
        "a record's prev pointer": (record + 16, struct.pack(">Q", 10**9)),
        "a record's version length": (record + 32, struct.pack(">H", 3)),
        "a record's data length": (record + 34, struct.pack(">Q", 10**6)),
        "the repeated length": (last + length - 8, struct.pack(">Q", 5)),
        "the header's lengths": (last + 17, struct.pack(">H", 60000)),
        "a pickle": (record + 42, b"\xfe" * 16),
        "the status": (last + 16, b"x"),
    }[how]
    blob[at[0] : at[0] + len(at[1])] = at[1]
    return bytes(blob)


@pytest.mark.parametrize(
    "how",
    [
        "a record's tid",
        "a record's transaction position",
        "a record's prev pointer",
        "a record's version length",
        "a record's data length",
        "the repeated length",
        "the header's lengths",
        "a pickle",
        "the status",
    ],
)
def test_filestorage_damage_inside_a_transaction_is_one_line(
    small_fs: bytes, tmp_path: Path, how: str
) -> None:
    from storages.file import check_filestorage

    path = tmp_path / "Data.fs"
    path.write_bytes(_damaged(small_fs, how))
    with pytest.raises(storages.DamagedStorage) as e:
        check_filestorage(path)
    message = str(e.value)
    assert "\n" not in message and "transaction 5" in message, message
    offset = int(message.split("at byte ")[1].split(":")[0])
    assert offset < len(small_fs), message  # a byte of the file
    assert "python -m ZODB.fsrecover" in message
    assert path.read_bytes() == _damaged(small_fs, how)


def test_the_filestorage_check_is_zodbs_fstest_first(
    small_fs: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The layout is fstest's to judge (ZODB.scripts.fstest.check_trec), in
    the suite's words: what it refuses is refused, one line."""
    from ZODB.scripts import fstest

    from storages.file import check_filestorage

    path = tmp_path / "Data.fs"
    path.write_bytes(small_fs)
    real = fstest.check_trec
    seen: list[int] = []

    def counted(*args: object) -> object:
        seen.append(int(args[2]))  # type: ignore[call-overload]
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(fstest, "check_trec", counted)
    assert check_filestorage(path) == 5  # the root's, then four
    assert len(seen) == 5 and seen[0] == 4

    def refused(path: str, file: object, pos: int, *rest: object) -> object:
        raise fstest.FormatError(f"{path} time-stamp reduction at {pos}: x <= y")

    monkeypatch.setattr(fstest, "check_trec", refused)
    with pytest.raises(storages.DamagedStorage, match="tid not above"):
        check_filestorage(path)
