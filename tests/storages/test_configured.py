"""Storages a ZConfig file or a URI names (storages.configured), the rule for
databases the suite did not create, and zlib+NAME (storages.zlib)."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from BTrees.OOBTree import OOBTree
from persistent.mapping import PersistentMapping

import storages
from storages import ROOT_KEY, StorageError, StorageOptions
from storages.configured import ConfiguredOptions, split_uri
from tests.cli.test_cli import vfab_bench
from tests.support.cli_helpers import assert_bad_input, run_cli


def configured(*uris: str, config: Path | None = None, pack: bool = False) -> Any:
    return StorageOptions(ConfiguredOptions(config, tuple(uris), pack))


def two_sections(tmp_path: Path) -> Path:
    """A ZConfig file as ZODB users write them: two <zodb> sections."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    path = tmp_path / "zodb.conf"
    path.write_text(
        textwrap.dedent(
            f"""\
            %import zc.zlibstorage
            <zodb plain>
              cache-size 1234
              <filestorage>
                path {tmp_path / "a" / "Data.fs"}
              </filestorage>
            </zodb>
            <zodb packed>
              <zlibstorage>
                <filestorage>
                  path {tmp_path / "b" / "Data.fs"}
                </filestorage>
              </zlibstorage>
            </zodb>
            """
        )
    )
    return path


def write_users_database(path: Path) -> None:
    """A FileStorage a user owns: plain entries, a BTree, and an entry under
    the suite's own key left by someone else."""
    from ZODB import DB
    from ZODB.FileStorage import FileStorage

    db = DB(FileStorage(str(path)))
    with db.transaction() as conn:
        root = conn.root()
        root["a"] = PersistentMapping(x=1)
        tree = root["tree"] = OOBTree()
        for i in range(50):
            tree[f"k{i:03d}"] = PersistentMapping(i=i)
        root[ROOT_KEY] = PersistentMapping(other=PersistentMapping(keep=True))
    db.close()


def snapshot(path: Path) -> dict[str, Any]:
    """Every root entry but the suite's key, as plain values with oids and
    serials, and the suite's key's entries: read read-only."""
    from ZODB import DB
    from ZODB.FileStorage import FileStorage

    db = DB(FileStorage(str(path), read_only=True))
    conn = db.open()
    root = conn.root()

    def plain(obj: Any) -> Any:
        if isinstance(obj, OOBTree):
            items = {k: plain(v) for k, v in obj.items()}
            return ("tree", obj._p_oid, obj._p_serial, items)
        if isinstance(obj, PersistentMapping):
            items = {k: plain(v) for k, v in obj.items()}
            return ("map", obj._p_oid, obj._p_serial, items)
        return obj

    try:
        return {
            "others": {k: plain(v) for k, v in root.items() if k != ROOT_KEY},
            "ours": {k: plain(v) for k, v in root[ROOT_KEY].items()},
        }
    finally:
        conn.close()
        db.close()


# -- columns ----------------------------------------------------------------


def test_split_uri_names_a_column_only_before_the_scheme() -> None:
    assert split_uri("x=file:///a?read_only=1") == ("x", "file:///a?read_only=1")
    assert split_uri("file:///a?read_only=1") == ("file:///a?read_only=1",) * 2


def test_columns_from_a_config_file_and_uris(tmp_path: Path) -> None:
    options = configured("u=memory://", "zlib+memory://", config=two_sections(tmp_path))
    assert list(storages.configured_columns(options)) == [
        "plain",
        "packed",
        "u",
        "zlib+memory://",
    ]
    factory = storages.get("plain", options)
    assert factory.name == "plain" and not factory.keeps_directory
    with pytest.raises(StorageError, match="unknown storage 'plain'"):
        storages.get("plain")  # without the options, no such column


@pytest.mark.subprocess
def test_two_zodb_sections_give_two_columns(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    config = two_sections(tmp_path)
    proc = vfab_bench(
        "run", "--storage-config", str(config), "--preset", "quick", "-q",
        "--json", str(out),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    header = next(ln for ln in proc.stdout.splitlines() if ln.startswith("task:"))
    assert header.split()[1:] == ["plain", "packed"]
    data = json.loads(out.read_text())
    assert data["metadata"]["config"]["storages"] == ["plain", "packed"]
    assert data["metadata"]["config"]["options"]["storage_config"] == str(config)
    assert {r["storage"] for r in data["results"]} == {"plain", "packed"}
    # The section's cache-size; ZConfig's default (5000) for the other.
    targets = {t["storage"]: t["stats"]["cache_target"] for t in data["trials"]}
    assert targets == {"plain": 1234, "packed": 5000}
    assert not any(r["phase"] == "pack" for r in data["results"])
    # The file the zlibstorage section wrote holds compressed records.
    assert b".zfs" not in (tmp_path / "a" / "Data.fs").read_bytes()
    assert b".z" in (tmp_path / "b" / "Data.fs").read_bytes()


def test_uri_column_on_a_new_file(tmp_path: Path) -> None:
    uri = f"file://{tmp_path / 'Data.fs'}"
    factory = storages.get(uri, configured(uri))
    with factory.open(tmp_path / "unused") as store:
        store.reset()
        store.root()["x"] = PersistentMapping(v=1)
        store.commit()
        store.reopen()
        assert store.root()["x"]["v"] == 1
        assert (store.size_bytes() or 0) > 0
        assert not store.can_pack
    assert not (tmp_path / "unused").exists()
    assert snapshot(tmp_path / "Data.fs") == {"others": {}, "ours": {}}


def test_in_memory_column_keeps_its_data_across_reopen() -> None:
    options = configured("m=memory://", "zm=zlib+memory://")
    for name in ("m", "zm"):
        with storages.get(name, options).open(Path("/nonexistent")) as store:
            store.reset()
            store.root()["x"] = 7
            store.commit()
            store.reopen()  # the cold rows: the data must still be there
            assert store.root()["x"] == 7


def test_sqlite_uri_column(tmp_path: Path) -> None:
    pytest.importorskip("relstorage", reason="RelStorage is not installed")
    uri = f"sqlite://?data_dir={tmp_path}"
    factory = storages.get("lite", configured(f"lite={uri}"))
    with factory.open(tmp_path / "unused") as store:
        store.reset()
        store.root()["x"] = PersistentMapping(v=1)
        store.commit()
        store.reopen()
        assert store.root()["x"]["v"] == 1
    with factory.open(tmp_path / "unused") as store:
        assert dict(store.root()) == {}  # the last trial removed its key


# -- the rule for databases the suite did not create -------------------------


@pytest.mark.subprocess
def test_run_on_a_users_database_touches_nothing_else(tmp_path: Path) -> None:
    fs = tmp_path / "Data.fs"
    write_users_database(fs)
    before = snapshot(fs)
    proc = vfab_bench(
        "run", "--storage-uri", f"theirs=file://{fs}", "--preset", "quick", "-q",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    after = snapshot(fs)
    assert after == before  # other entries: same objects, same serials
    assert list(after["ours"]) == ["other"]  # no trial key left
    assert "pack" not in {ln.split("  ")[0] for ln in proc.stdout.splitlines()}


def test_filestorage_opens_read_only_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import zodburi.resolvers

    fs = tmp_path / "Data.fs"
    write_users_database(fs)
    opened: list[bool] = []
    real = zodburi.resolvers.FileStorage

    def recording(*args: Any, **kw: Any) -> Any:
        opened.append(bool(kw.get("read_only")))
        return real(*args, **kw)

    monkeypatch.setattr(zodburi.resolvers, "FileStorage", recording)
    uri = f"file://{fs}"
    with storages.get(uri, configured(uri)).open(tmp_path):
        pass
    assert opened == [True, False]


def test_pack_only_when_asked(tmp_path: Path) -> None:
    uri = f"file://{tmp_path / 'Data.fs'}"
    for pack in (False, True):
        with storages.get(uri, configured(uri, pack=pack)).open(tmp_path) as s:
            s.reset()
            assert s.can_pack is pack
            if pack:
                s.pack()
            else:
                with pytest.raises(NotImplementedError):
                    s.pack()


def test_trial_key_goes_even_when_the_trial_fails(tmp_path: Path) -> None:
    fs = tmp_path / "Data.fs"
    write_users_database(fs)
    uri = f"file://{fs}"
    with pytest.raises(RuntimeError):
        with storages.get(uri, configured(uri)).open(tmp_path) as store:
            store.reset()
            store.root()["half"] = PersistentMapping()
            raise RuntimeError("boom")
    assert list(snapshot(fs)["ours"]) == ["other"]


# -- zlib+NAME ---------------------------------------------------------------


def fill(store: Any) -> None:
    store.reset()
    root = store.root()
    for i in range(300):
        root[f"k{i}"] = PersistentMapping(text="plasma etching of aluminum " * 8)
    store.commit()


def test_zlib_file_round_trip_and_smaller(tmp_path: Path) -> None:
    sizes = {}
    for name in ("file", "zlib+file"):
        (tmp_path / name).mkdir()
        with storages.get(name).open(tmp_path / name) as store:
            fill(store)
            store.reopen()
            assert store.root()["k7"]["text"].startswith("plasma etching")
            sizes[name] = store.size_bytes()
        with storages.get(name).open(tmp_path / name) as store:  # kept on disk
            assert len(store.root()) == 300
    assert sizes["zlib+file"] < sizes["file"] / 2, sizes


def test_zlib_prefix_needs_a_storage_that_wraps() -> None:
    assert storages.known("zlib+mapping") and storages.known("zlib+bdb")
    for name in ("zlib+zeo", "zlib+memory", "zlib+nothing"):
        with pytest.raises(StorageError, match="zlib\\+ goes in front of"):
            storages.get(name)


# -- bad input ---------------------------------------------------------------


@pytest.fixture
def bad_files(tmp_path: Path) -> Iterator[Path]:
    (tmp_path / "unknown.conf").write_text("<zodb x>\n<nosuch/>\n</zodb>\n")
    (tmp_path / "broken.conf").write_text("<zodb x>\n  <filestorage>\n")
    (tmp_path / "empty.conf").write_text("%import zc.zlibstorage\n")
    (tmp_path / "two.conf").write_text(
        "<zodb a>\n<mappingstorage/>\n</zodb>\n<zodb>\n<mappingstorage/>\n</zodb>\n"
    )
    (tmp_path / "junk.fs").write_text("not a FileStorage")
    yield tmp_path


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--storage-config", "missing.conf"], "missing.conf does not exist"),
        (["--storage-config", "unknown.conf"], "unknown type name: 'nosuch'"),
        (["--storage-config", "broken.conf"], "unclosed sections"),
        (["--storage-config", "empty.conf"], "holds no <zodb> section"),
        (["--storage-config", "two.conf"], "every <zodb> section needs a name"),
        (["--storage-uri", "foo://x"], "no resolver for foo: URIs"),
        (["--storage-uri", "nonsense"], "not a URI"),
        (["--storage-uri", "zeo://127.0.0.1:1"], "cannot reach the server"),
        (["--storage-uri", "postgres://127.0.0.1:1/db"], "cannot reach the server"),
        (["--storage-uri", "FS"], "not a FileStorage file"),
        (["--storage-uri", "file=memory://"], "has a registered storage's name"),
        (["--storage-uri", "a=memory://", "--storage-uri", "a=memory://"], "twice"),
        (["--storage", "zlib+zeo"], "zlib+ goes in front of"),
        (["--storage-uri", "d=demo:(memory://)/(memory://)"], "a DemoStorage"),
    ],
)
def test_bad_input(
    args: list[str],
    fragment: str,
    bad_files: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(bad_files)
    args = [f"file://{bad_files / 'junk.fs'}" if a == "FS" else a for a in args]
    for command in ("run", "sweep"):
        outcome = run_cli(capsys, command, *args, "--preset", "quick")
        assert_bad_input(outcome, fragment)


def test_census_takes_a_config_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = two_sections(tmp_path)
    write_users_database(tmp_path / "a" / "Data.fs")
    (tmp_path / "a" / "Data.fs.lock").unlink()  # left by the writer
    outcome = run_cli(capsys, "census", "--storage-config", str(config))
    assert_bad_input(outcome, "2 <zodb> sections: name one with --database")
    outcome = run_cli(
        capsys, "census", "--storage-config", str(config), "--database", "plain"
    )
    assert outcome.status == 0, outcome.err
    assert "<zodb plain>" in outcome.out and "OOBTree" in outcome.out
    assert not (tmp_path / "a" / "Data.fs.lock").exists()  # read-only: no lock


@pytest.mark.server
def test_zeo_address_follows_the_same_rule(
    tmp_path: Path, no_leaked_servers: None
) -> None:
    import transaction
    import ZEO
    import ZODB

    from storages.file import filestorage_section
    from storages.zeo import ZEOOptions, ZEOServer

    with ZEOServer(tmp_path, filestorage_section(tmp_path)) as server:
        for pack in (False, True):
            options = StorageOptions(
                ZEOOptions(zeo_address=server.address), ConfiguredOptions(pack=pack)
            )
            (tmp_path / f"client-{pack}").mkdir()
            with storages.get("zeo", options).open(tmp_path / f"client-{pack}") as s:
                s.reset()
                s.root()["x"] = 1
                s.commit()
                assert s.can_pack is pack
        db = ZODB.DB(ZEO.client(server.address))
        conn = db.open(transaction.TransactionManager())
        assert dict(conn.root()[ROOT_KEY]) == {}  # both trial keys removed
        conn.close()
        db.close()
