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
    ZEOBDBFactory,
    bdbstorage_section,
    berkeleydb_missing,
)
from storages.bdb.storage import BDBStorage  # noqa: E402
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


# -- out of memory is not damage (issue 28) -------------------------------------


def _limited(megabytes: int) -> Any:
    """A preexec_fn limiting a child's address space (ulimit -v)."""
    import resource

    def limit() -> None:  # pragma: no cover - runs in the child
        size = megabytes << 20
        resource.setrlimit(resource.RLIMIT_AS, (size, size))

    return limit


@pytest.mark.subprocess
@pytest.mark.parametrize("megabytes", [100, 150])
def test_a_healthy_environment_short_of_memory_is_not_called_damaged(
    tmp_path: Path, megabytes: int
) -> None:
    """At ulimit -v 100 MB a healthy data set was "damaged (repair a copy
    with db_recover)": Berkeley DB, unable to map its cache, says
    DB_RUNRECOVERY.  The check says out of memory, exit 2, nothing changed."""
    import subprocess

    from tests.storages.test_composites import snapshot
    from tests.support.served import ROOT, env

    data = tmp_path / "data"
    made = subprocess.run(
        [sys.executable, "-m", "scenarios.cli", "populate", "--storage", "bdb"]
        + ["--path", str(data), "-q"],
        capture_output=True,
        text=True,
        env=env(),
        cwd=ROOT,
        timeout=120,
    )
    assert made.returncode == 0, made.stderr
    before = snapshot(data)
    for args in (
        ["census", "--path", str(data), "--storage", "bdb"],
        ["populate", "--storage", "bdb", "--path", str(data), "--overwrite"],
    ):
        proc = subprocess.run(
            [sys.executable, "-m", "scenarios.cli", *args],
            capture_output=True,
            text=True,
            env=env(),
            cwd=ROOT,
            timeout=120,
            preexec_fn=_limited(megabytes),
        )
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and len(lines) == 1, proc.stderr
        assert "out of memory" in lines[0] and "damaged" not in lines[0], lines
        assert snapshot(data) == before, args


def test_enomem_opening_an_environment_is_out_of_memory(tmp_path: Path) -> None:
    import errno

    from storages.bdb.options import BDBOutOfMemory, out_of_memory

    said = out_of_memory(OSError(errno.ENOMEM, "no"), tmp_path, 64 << 20, False)
    assert isinstance(said, BDBOutOfMemory) and "out of memory" in str(said)
    # A fatal error with memory to spare is the environment's own.
    assert out_of_memory(OSError(-30973, "x"), tmp_path, 1 << 20, True) is None
    assert out_of_memory(OSError(errno.EIO, "x"), tmp_path, 64 << 20, False) is None


# -- paths too long for Berkeley DB (issue 28) ----------------------------------


def _deep(root: Path, length: int) -> Path:
    """A directory below *root* whose path is about *length* bytes."""
    path = root
    while len(str(path)) < length - 200:
        path = path / ("d" * 200)
    path = path / ("e" * max(1, length - len(str(path)) - 1))
    path.mkdir(parents=True)
    return path


def test_an_environment_path_past_the_limit_is_refused_before_creating_it(
    tmp_path: Path,
) -> None:
    """libdb 5.3 opened an environment of 1,009 bytes once, then failed to
    open it again ("BDB2509 the log files..."): refused at once, nothing
    made there."""
    from storages.bdb.options import MAX_PATH_BYTES

    parent = _deep(tmp_path, MAX_PATH_BYTES - 4)
    fits = parent / ("x" * (MAX_PATH_BYTES - len(str(parent)) - 1))
    assert len(str(fits)) == MAX_PATH_BYTES
    for _ in range(2):  # opened, then opened again
        storage = BDBStorage(fits, cache_size=8 << 20)
        storage.close()
    too_long = parent / ("y" * (MAX_PATH_BYTES - len(str(parent))))
    with pytest.raises(BDBError, match=f"at most {MAX_PATH_BYTES} bytes"):
        BDBStorage(too_long)
    assert not too_long.exists()


@pytest.mark.subprocess
def test_a_tmpdir_too_long_for_berkeley_db_is_refused_before_the_work(
    tmp_path: Path,
) -> None:
    """A 4,000-character TMPDIR made bdb fail in a phase (the cold reopen);
    run refuses it first, one line, exit 2; so does the check of an
    existing environment, which copies it there."""
    import subprocess

    from tests.support.served import ROOT, env

    data = tmp_path / "data"
    made = subprocess.run(
        [sys.executable, "-m", "scenarios.cli", "populate", "--storage", "bdb"]
        + ["--path", str(data), "-q"],
        capture_output=True,
        text=True,
        env=env(),
        cwd=ROOT,
        timeout=120,
    )
    assert made.returncode == 0, made.stderr
    tmpdir = _deep(tmp_path / "tmp", 4000)
    for args in (
        ["run", "--storage", "bdb", "--preset", "quick", "-q"],
        ["census", "--path", str(data), "--storage", "bdb"],
    ):
        proc = subprocess.run(
            [sys.executable, "-m", "scenarios.cli", *args],
            capture_output=True,
            text=True,
            env=dict(env(), TMPDIR=str(tmpdir)),
            cwd=ROOT,
            timeout=120,
        )
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and len(lines) == 1, proc.stderr
        assert "set a shorter TMPDIR" in lines[0], lines
        assert list(tmpdir.iterdir()) == [], args
