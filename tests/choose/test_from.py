"""choose --from: the user's database copied into each candidate, every
record compared; a record lost makes the storage WRONG, never
recommended; the source is never changed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import storages
from scenarios.choose import source as from_source
from scenarios.choose.config import ChooseConfig
from scenarios.cli import main
from scenarios.errors import EXIT_VIOLATIONS
from scenarios.progress import Progress
from tests.choose.sources import LossyFactory, digest, verdict, write_source


@pytest.fixture
def source(tmp_path: Path) -> tuple[Path, int, int]:
    path = tmp_path / "src" / "Data.fs"
    path.parent.mkdir()
    return (path, *write_source(path))


def test_a_source_of_unimportable_classes_is_copied_and_checked(
    source: tuple[Path, int, int],
) -> None:
    path, records, objects = source
    with pytest.raises(ImportError):
        __import__("choose_app")
    before = digest(path.parent)
    config = ChooseConfig(("file",), clients=(1, 2), quick=True, source=str(path))
    opened = from_source.open_source(str(path))
    try:
        candidate = from_source.measure(
            config, "file", storages.StorageOptions(), opened, Progress(None)
        )
    finally:
        opened.close()
    assert digest(path.parent) == before
    copy = candidate.copy
    assert copy is not None
    assert copy.transactions == 32  # the root's, the tree's, 30
    assert copy.records == records
    # FileStorage keeps history: every revision but the latest checked too
    assert copy.revisions_checked == records - objects
    assert copy.checked == objects
    assert (copy.lost, copy.changed) == (0, 0)
    assert candidate.verdict()[0] == "right"
    assert candidate.recommendable
    assert sum(b.transactions for b in copy.by_size) == 32
    # one process only: read at one client, cold then warm
    assert [(r.clients, r.cold) for r in copy.reads] == [(1, True), (1, False)]
    assert all(r.loads > 0 for r in copy.reads)
    assert candidate.size_bytes and candidate.size_bytes > 0


def test_a_storage_that_loses_a_record_is_wrong_and_not_recommended(
    source: tuple[Path, int, int],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setitem(storages.REGISTRY, LossyFactory.name, LossyFactory)
    path, _, _ = source
    before = digest(path.parent)
    out = tmp_path / "choose.json"
    status = main(["choose", "--storage", "lossy-file,file", "--from", str(path),
                   "--quick", "-q", "--json", str(out)])  # fmt: skip
    text = capsys.readouterr().out
    assert status == EXIT_VIOLATIONS, text
    assert digest(path.parent) == before
    first, rows = verdict(text)
    assert first.startswith("choose: file for one process"), text
    assert rows["lossy-file"].startswith("WRONG: 1 record lost"), text
    assert rows["lossy-file"].endswith("not recommended"), text
    assert rows["file"].endswith("one process only; right"), text
    doc = json.loads(out.read_text())
    assert doc["kind"] == "choose"
    found = {c["storage"]: c for c in doc["candidates"]}
    assert found["lossy-file"]["verdict"] == "WRONG"
    assert found["lossy-file"]["copy"]["lost"] == 1
    assert found["file"]["verdict"] == "right"


def test_memory_is_bounded_by_a_transaction_not_the_database(tmp_path: Path) -> None:
    """The issue's limit: --from's memory is bounded by the largest
    transaction, not the database.  A source of about 40 MB in
    transactions of about 200 KB, copied, every record compared and read
    back: the peak Python allocation stays under a sixth of the source
    (a copy that held every record, or every state, would pass it)."""
    import tracemalloc

    path = tmp_path / "src" / "Data.fs"
    path.parent.mkdir()
    records, objects = write_source(path, transactions=200, per=4, payload=50_000)
    whole = path.stat().st_size
    assert whole > 35_000_000
    config = ChooseConfig(("file",), clients=(1,), quick=True, source=str(path))
    opened = from_source.open_source(str(path))
    tracemalloc.start()
    try:
        candidate = from_source.measure(
            config, "file", storages.StorageOptions(), opened, Progress(None)
        )
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        opened.close()
    copy = candidate.copy
    assert copy is not None and copy.records == records
    assert copy.checked == objects and (copy.lost, copy.changed) == (0, 0)
    # about 3 MB here (fixed costs, the histograms, one transaction): a
    # generous bound, far below what holding the source would take
    assert peak < whole / 6, (peak, whole)
