"""vfab-bench populate: writes a data set, keeps it, never replaces what is
not its own."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import storages
from scenarios.data import datadir, dataset
from scenarios.data.datadir import MARKER
from storages.file import filestorage_section
from storages.zeo import ZEOServer
from tests.support.cli_helpers import assert_bad_input, run_cli
from vfab.generate import DataSpec


def listing(path: Path) -> dict[str, tuple[int, int]]:
    """name -> (size, mtime) of every file below *path*."""
    out = {}
    for dirpath, _, names in os.walk(path):
        for n in names:
            st = os.stat(os.path.join(dirpath, n))
            out[os.path.relpath(os.path.join(dirpath, n), path)] = (
                st.st_size,
                st.st_mtime_ns,
            )
    return out


def test_populate_writes_and_keeps_a_data_set(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "small"
    r = run_cli(capsys, "populate", "--path", str(target), "--seed", "7", "-q")
    assert r.status == 0, r.err
    assert "small data set (seed 7) with file" in r.out
    marker = json.loads((target / MARKER).read_text())
    assert marker["complete"] and marker["storage"] == "file"
    assert marker["spec"] == {"scale": 1, "seed": 7, "size": "small"}
    assert "Data.fs" in marker["entries"] and MARKER not in marker["entries"]
    with storages.get("file").open(target) as store:
        assert dataset.existing(store) == {"scale": 1, "seed": 7, "size": "small"}
        assert len(store.root()["fab"].library) == 250


def test_existing_data_set_needs_overwrite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "d"
    assert run_cli(capsys, "populate", "--path", str(target), "-q").status == 0
    before = listing(target)
    r = run_cli(capsys, "populate", "--path", str(target), "--scale", "2")
    assert_bad_input(r, "already holds a file data set (small, seed 2000)")
    assert listing(target) == before

    # --overwrite removes what the storage created, keeps a user's file.
    (target / "notes.txt").write_text("mine")
    r = run_cli(
        capsys, "populate", "--path", str(target), "--scale", "2", "--overwrite", "-q"
    )
    assert r.status == 0, r.err
    assert (target / "notes.txt").read_text() == "mine"
    marker = json.loads((target / MARKER).read_text())
    assert marker["spec"]["scale"] == 2 and "notes.txt" not in marker["entries"]
    with storages.get("file").open(target) as store:
        assert len(store.root()["fab"].library) == 500
        # A fresh database, not the old one with a new fab on top.
        assert len(store.db.storage) == marker["objects"]


@pytest.mark.parametrize("name", ["oracle", "memory", "mapping", "zeo"])
def test_storage_must_keep_a_directory(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    r = run_cli(capsys, "populate", "--storage", name, "--path", str(tmp_path / "x"))
    valid = ", ".join(datadir.path_storages())
    assert_bad_input(
        r, f"unknown storage {name!r} for a database at a path; choose from {valid}"
    )
    assert list(tmp_path.iterdir()) == []


def test_path_storages_follow_the_registry() -> None:
    # bdb joins automatically when its branch registers it.
    expected = [
        n
        for n, f in storages.REGISTRY.items()
        if f.keeps_directory and not n.startswith("zeo")
    ]
    assert datadir.path_storages() == expected
    assert "file" in expected


def test_refuses_a_directory_it_did_not_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "Data.fs").write_bytes(b"someone else's")
    r = run_cli(capsys, "populate", "--path", str(tmp_path), "--overwrite")
    assert_bad_input(r, "is not empty and holds no data set written by vfab-bench")
    assert (tmp_path / "Data.fs").read_bytes() == b"someone else's"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["Data.fs"]


def test_refuses_another_storages_data_set(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / MARKER).write_text(
        json.dumps({"storage": "bdb", "complete": True, "entries": ["bdb"]})
    )
    (tmp_path / "bdb").mkdir()
    r = run_cli(capsys, "populate", "--path", str(tmp_path), "--overwrite")
    assert_bad_input(r, "holds a bdb data set, not file")
    assert (tmp_path / "bdb").is_dir()


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--path", "/nonexistent/parent/d"], "directory /nonexistent/parent does"),
        (["--size", "huge", "--path", "d"], "invalid choice: 'huge'"),
        (["--scale", "0", "--path", "d"], "must be from 1 to"),
        (["--size", "small", "--scale", "2", "--path", "d"], "give --size or --scale"),
        ([], "the following arguments are required: --path"),
    ],
)
def test_bad_input(
    args: list[str], fragment: str, empty_cwd: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert_bad_input(run_cli(capsys, "populate", *args), fragment)
    assert not list(empty_cwd.iterdir())


def test_a_file_is_not_a_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "Data.fs"
    f.write_bytes(b"x")
    assert_bad_input(
        run_cli(capsys, "populate", "--path", str(f)), "is not a directory"
    )


@pytest.mark.server
def test_overwrite_refused_while_a_server_holds_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_leaked_servers: None
) -> None:
    target = tmp_path / "d"
    assert run_cli(capsys, "populate", "--path", str(target), "-q").status == 0
    with ZEOServer(target, filestorage_section(target)):
        before = {n: s for n, (s, _) in listing(target).items() if "zeo" not in n}
        r = run_cli(capsys, "populate", "--path", str(target), "--overwrite", "-q")
        assert_bad_input(r, "is locked: another process has it open")
        after = {n: s for n, (s, _) in listing(target).items() if "zeo" not in n}
        assert after == before


def test_interrupted_populate_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(dataset, "populate", interrupted)
    target = tmp_path / "d"
    with pytest.raises(KeyboardInterrupt):
        datadir.populate("file", target, DataSpec.for_size("small"), 1)
    assert not target.exists()

    # In an existing empty directory: the directory stays, empty.
    target.mkdir()
    with pytest.raises(KeyboardInterrupt):
        datadir.populate("file", target, DataSpec.for_size("small"), 1)
    assert list(target.iterdir()) == []
