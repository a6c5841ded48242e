"""BDBStorage in the suite and in the ZODB ecosystem: the registry and its
factories, ZConfig (ZODB.config and a real runzeo), and zodburi."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("berkeleydb")

import transaction  # noqa: E402
import ZODB  # noqa: E402
import ZODB.config  # noqa: E402
from BTrees.OOBTree import OOBTree  # noqa: E402

import storages  # noqa: E402
from storages.base import StorageError, StorageOptions  # noqa: E402
from storages.bdb import (  # noqa: E402
    BDBError,
    BDBFactory,
    BDBFactoryOptions,
    BDBStorage,
    ZEOBDBFactory,
    bdbstorage_section,
    berkeleydb_missing,
)
from storages.zeo import ZEOServer, open_client  # noqa: E402

# -- registry and factories -------------------------------------------------


def test_registered_and_measured_by_default() -> None:
    assert storages.REGISTRY["bdb"] is BDBFactory
    assert storages.REGISTRY["zeo+bdb"] is ZEOBDBFactory
    defaults = storages.DEFAULT_STORAGES
    assert defaults.index("file") < defaults.index("bdb") < defaults.index("zeo")
    assert storages.get("bdb").unavailable() is None
    assert storages.get("zeo+bdb").unavailable() is None


def test_unavailable_without_berkeleydb(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "berkeleydb", None)
    monkeypatch.setitem(sys.modules, "berkeleydb.db", None)
    reason = berkeleydb_missing()
    assert reason is not None and "berkeleydb" in reason and "bdb" in reason
    assert storages.get("bdb").unavailable() == reason
    with pytest.raises(StorageError, match="berkeleydb is not importable"):
        storages.get("bdb").open(Path("/nonexistent"))


def test_bad_durability_fails_when_the_factory_is_made() -> None:
    with pytest.raises(StorageError, match="bad durability 'fast'; choose from"):
        storages.get("bdb", StorageOptions(BDBFactoryOptions(bdb_durability="fast")))


def test_bdb_factory_store_round_trip(tmp_path: Path) -> None:
    options = StorageOptions(
        BDBFactoryOptions(bdb_cache_size=16 << 20, bdb_durability="write-nosync")
    )
    with storages.get("bdb", options).open(tmp_path) as store:
        store.reset()
        store.root()["tree"] = OOBTree({"k": "v"})
        store.commit()
        storage = store.db.storage  # type: ignore[attr-defined]
        assert storage._options.cache_size == 16 << 20
        assert storage._options.durability == "write-nosync"
        size = store.size_bytes()
        assert size is not None and size > 0
        store.reopen()  # a cold cache over the same environment
        assert dict(store.root()["tree"]) == {"k": "v"}
        counts = store.transfer_counts()
        assert counts is not None and counts[0] >= 1 and counts[1] == 0  # loads
    assert (tmp_path / "bdb" / "zodb.db").exists()


# -- ZConfig ------------------------------------------------------------------


def test_zconfig_section(tmp_path: Path) -> None:
    env = tmp_path / "env"
    storage = ZODB.config.storageFromString(
        f"""
        %import storages.bdb
        <bdbstorage>
          path {env}
          cache-size 16MB
          durability write-nosync
          checkpoint-kbytes 2048
          max-locks 20000
          pack-gc false
        </bdbstorage>
        """
    )
    try:
        assert isinstance(storage, BDBStorage)
        options = storage._options
        assert options.cache_size == 16 << 20
        assert options.durability == "write-nosync"
        assert (options.checkpoint_kbytes, options.max_locks) == (2048, 20000)
        assert options.pack_gc is False
    finally:
        storage.close()


def test_zconfig_database_and_defaults(tmp_path: Path) -> None:
    db = ZODB.config.databaseFromString(
        f"""
        %import storages.bdb
        <zodb>
          cache-size 1000
          <bdbstorage>
            path {tmp_path / "env"}
          </bdbstorage>
        </zodb>
        """
    )
    try:
        assert db.storage._options.durability == "sync"
        with db.transaction() as conn:
            conn.root()["x"] = 1
        with db.transaction() as conn:
            assert conn.root()["x"] == 1
    finally:
        db.close()


def test_zconfig_bad_value(tmp_path: Path) -> None:
    with pytest.raises(BDBError, match="bad durability 'often'"):
        ZODB.config.storageFromString(
            f"%import storages.bdb\n<bdbstorage>\n path {tmp_path / 'e'}\n"
            " durability often\n</bdbstorage>\n"
        )


@pytest.mark.server
def test_runzeo_serves_a_bdbstorage(tmp_path: Path, no_leaked_servers: None) -> None:
    section = bdbstorage_section(tmp_path, {"cache_size": 16 << 20})
    with ZEOServer(tmp_path, section, imports=("storages.bdb",)) as server:
        db = ZODB.DB(open_client(server.address, StorageOptions()))
        try:
            with db.transaction() as conn:
                conn.root()["tree"] = OOBTree({"a": 1})
            # Two clients' transactions on one bucket: resolved by the server.
            tm1, tm2 = (
                transaction.TransactionManager(),
                transaction.TransactionManager(),
            )
            c1, c2 = db.open(tm1), db.open(tm2)
            c1.root()["tree"]["b"] = 2
            c2.root()["tree"]["c"] = 3
            tm1.commit()
            tm2.commit()
            c1.close()
            c2.close()
            with db.transaction() as conn:
                assert dict(conn.root()["tree"]) == {"a": 1, "b": 2, "c": 3}
            assert len(db.storage) >= 2
        finally:
            db.close()
    assert not server.running
    # The server closed the environment cleanly: it opens here, with the data.
    storage = BDBStorage(tmp_path / "bdb")
    try:
        assert len(storage) >= 2
    finally:
        storage.close()


@pytest.mark.server
def test_zeo_bdb_factory(tmp_path: Path, no_leaked_servers: None) -> None:
    store = storages.get("zeo+bdb").open(tmp_path)
    with store:
        store.reset()
        store.root()["n"] = 41
        store.commit()
        store.reopen()
        assert store.root()["n"] == 41
        assert "server" in store.jar_stats()
    assert "<bdbstorage 1>" in (tmp_path / "zeo.conf").read_text()
    assert (tmp_path / "bdb" / "zodb.db").exists()


# -- zodburi ------------------------------------------------------------------


def test_zodburi_resolves_bdb_uris(tmp_path: Path) -> None:
    zodburi = pytest.importorskip("zodburi")
    env = tmp_path / "env"
    factory, dbkw = zodburi.resolve_uri(
        f"bdb://{env}?cache_size=16MB&durability=write-nosync"
        "&pack_gc=false&connection_cache_size=5000"
    )
    assert dbkw["cache_size"] == 5000
    storage = factory()
    try:
        assert isinstance(storage, BDBStorage)
        assert storage.getName() == str(env)
        assert storage._options.cache_size == 16 << 20
        assert storage._options.durability == "write-nosync"
        assert storage._options.pack_gc is False
    finally:
        storage.close()


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("bdb://relative/path", "needs an absolute path"),
        ("bdb:///tmp/x?cache_size=lots", "bad byte size 'lots'"),
        ("bdb:///tmp/x?durability=never", "bad durability 'never'"),
        ("bdb:///tmp/x?max_locks=ten", "bad max_locks 'ten'"),
    ],
)
def test_zodburi_bad_uris(uri: str, message: str) -> None:
    zodburi: Any = pytest.importorskip("zodburi")
    with pytest.raises(BDBError, match=message):
        zodburi.resolve_uri(uri)
