"""A storage with files and a URI scheme of its own needs its module and
one registration (docs/storages.md): the scheme table, the read-only
check before opening, a read-only census and a --storage-uri column all
come from what its factory declares (storages.named, storages.checks).

Stood in for by a FileStorage under another name and scheme (tfile://),
opened by its factory's uri_opener (no zodburi resolver), registered the
way the registry holds built-ins."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from persistent.mapping import PersistentMapping

import storages
from storages.base import URIScheme
from storages.file import FileFactory, open_filestorage
from storages.named import URISource, uri_schemes
from tests.storages.test_composites import snapshot
from tests.support.cli_helpers import assert_bad_input, run_cli


class TFileFactory(FileFactory):
    """A storage module as a new one would be: what generic code asks is
    declared here, nowhere else."""

    name = "tfile"
    description = "FileStorage under the tfile:// scheme (a test)"
    uri_schemes = (URIScheme("tfile", read_only=True, local=True),)

    @classmethod
    def uri_opener(
        cls, uri: str, read_only: bool, wait_timeout: float | None = None
    ) -> Any:
        path = Path(uri.partition("://")[2].partition("?")[0])
        return lambda: open_filestorage(path, read_only=read_only)


@pytest.fixture
def tfile(monkeypatch: pytest.MonkeyPatch) -> type[TFileFactory]:
    monkeypatch.setitem(storages.REGISTRY, TFileFactory.name, TFileFactory)
    return TFileFactory


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """A directory holding a whole Data.fs of three transactions."""
    directory = tmp_path / "data"
    directory.mkdir()
    with FileFactory().open(directory) as store:
        for i in range(3):
            store.root()[f"n{i}"] = PersistentMapping(v=i)
            store.commit()
    for scratch in directory.glob("Data.fs.*"):
        if scratch.name != "Data.fs.index":
            scratch.unlink()
    return directory


def test_the_scheme_is_known_from_the_factory_alone(tfile: type) -> None:
    assert "tfile" in uri_schemes()
    scheme, factory = URISource("tfile:///x/Data.fs").entry()
    assert scheme.read_only and scheme.local and factory is tfile


def test_it_opens_read_only_when_asked(tfile: type, data: Path) -> None:
    storage = URISource(f"tfile://{data / 'Data.fs'}").open(read_only=True)
    try:
        assert storage.isReadOnly()
    finally:
        storage.close()


def test_census_reads_it_read_only_writing_nothing(
    tfile: type, data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = snapshot(data)
    outcome = run_cli(capsys, "census", f"tfile://{data / 'Data.fs'}")
    assert outcome.status == 0, outcome.err
    assert "PersistentMapping" in outcome.out
    assert snapshot(data) == before  # no lock, no index written


def test_a_damaged_database_is_refused_by_census_and_run(
    tfile: type, data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fs = data / "Data.fs"
    fs.write_bytes(fs.read_bytes()[:-10])
    before = snapshot(data)
    for args in (
        ["census", f"tfile://{fs}"],
        ["run", "--storage-uri", f"theirs=tfile://{fs}", "--preset", "quick", "-q"],
    ):
        assert_bad_input(run_cli(capsys, *args), "damaged")
        assert snapshot(data) == before, args
