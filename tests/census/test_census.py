"""vfab-bench census: counts per class match the generator's spec, on any
ZODB database, read-only."""

from __future__ import annotations

import json
import subprocess
import sys
import types
from pathlib import Path

import pytest
import transaction
from BTrees.OOBTree import OOBTree
from persistent import Persistent
from persistent.mapping import PersistentMapping

from scenarios.census import runner, sources
from scenarios.census.model import Census
from scenarios.data import datadir
from scenarios.results.files import CENSUS
from storages.file import filestorage_section
from storages.zeo import ZEOServer
from tests.dataset.test_populate import listing
from tests.support.cli_helpers import assert_bad_input, run_cli
from vfab import generate
from vfab.generate import DataSpec, load_catalogue

M = "vfab.model."


def expected_counts(spec: DataSpec, seed: int) -> dict[str, int]:
    """Objects per vfab class in a data set, from the spec, the shipped
    catalogue and (for the random number of steps) the generator itself."""
    cat = load_catalogue()
    fab = generate.build(spec, seed)
    steps = sum(len(s.steps) for s in fab.sequences.values())
    assert spec.sequences * spec.steps_min <= steps <= spec.sequences * spec.steps_max
    return {
        M + "VirtualFab": 1,
        M + "Directory": 1,
        M + "Catalogue": 1,
        M + "ProcessLibrary": 1,
        M + "User": spec.users,
        M + "Group": spec.groups,
        M + "Lab": spec.labs(cat),
        M + "Material": len(cat.materials),
        M + "Process": len(cat.processes),
        M + "ParameterDefinition": sum(len(p["parameters"]) for p in cat.processes),
        M + "ProcessCapability": spec.capabilities,
        M + "ProcessSequence": spec.sequences,
        M + "ProcessStep": steps,
        # the ZODB root and the suite's root container
        "persistent.mapping.PersistentMapping": 2,
    }


def take(source: sources.Source) -> Census:
    try:
        return runner.take(source.storage, source.name, source.directory)
    finally:
        source.close()


@pytest.mark.parametrize("size", ["small", "medium"])
def test_census_matches_the_generator(size: str, tmp_path: Path) -> None:
    spec, seed = DataSpec.for_size(size), 31
    target = tmp_path / size
    datadir.populate("file", target, spec, seed)
    before = listing(target)

    c = take(sources.open_path("file", target))
    counts = c.counts()
    expected = expected_counts(spec, seed)
    assert {k: counts.get(k) for k in expected} == expected
    # Everything else is the BTrees holding the collections and the indexes:
    # 5 OOBTrees for collections (users, groups, materials, processes,
    # labs), 5 for indexes (the library's by category, lab, material and
    # process+price, the fab's sequences by group), 2 IOBTrees (library,
    # sequences), one id set per index key, the price index, the library's
    # Length, and their buckets.
    assert counts["BTrees.OOBTree.OOBTree"] == 10
    assert counts["BTrees.IOBTree.IOBTree"] == 2
    assert counts["BTrees.Length.Length"] == 1
    fab = generate.build(spec, seed)
    library = fab.library
    assert counts["BTrees.IIBTree.IITreeSet"] == sum(
        len(index)
        for index in (
            library.by_category,
            library.by_lab,
            library.by_material,
            fab.sequences_by_group,
        )
    )
    assert counts["BTrees.LLBTree.LLTreeSet"] == 1 + len(library.by_process_price)
    others = set(counts) - set(expected)
    assert others <= {
        "BTrees.OOBTree.OOBTree",
        "BTrees.OOBTree.OOBucket",
        "BTrees.IOBTree.IOBTree",
        "BTrees.IOBTree.IOBucket",
        "BTrees.IIBTree.IITreeSet",
        "BTrees.IIBTree.IISet",
        "BTrees.LLBTree.LLTreeSet",
        "BTrees.LLBTree.LLSet",
        "BTrees.Length.Length",
    }
    assert c.vfab == {"scale": spec.scale, "seed": seed, "size": size}
    # A fresh data set has no garbage: the walk reaches every current object.
    assert c.objects == c.storage_len
    assert c.revisions is not None
    assert c.revisions.current == c.objects and c.revisions.unreachable == 0
    assert c.revisions.records == c.revisions.current + c.revisions.old
    assert sum(x.revisions or 0 for x in c.classes) == c.revisions.records
    assert c.missing == 0
    assert c.pickle_bytes < c.size_bytes  # type: ignore[operator]
    assert all(x.bytes > 0 for x in c.classes)
    assert listing(target) == before  # read-only: not a byte changed


def write_foreign_database(path: Path) -> None:
    """A FileStorage that is not vfab's: mappings, a BTree, an object of a
    class that exists only while writing, and one unreachable object."""
    from ZODB import DB
    from ZODB.FileStorage import FileStorage

    module = types.ModuleType("ghostmodule")

    class Ghost(Persistent):
        pass

    Ghost.__module__ = "ghostmodule"
    module.Ghost = Ghost  # type: ignore[attr-defined]
    sys.modules["ghostmodule"] = module
    try:
        db = DB(FileStorage(str(path)))
        with db.transaction() as conn:
            root = conn.root()
            root["a"] = PersistentMapping(x=1)
            root["b"] = PersistentMapping(y=[1, 2, 3])
            tree = root["tree"] = OOBTree()
            for i in range(300):
                tree[f"k{i:04d}"] = PersistentMapping(i=i)
            root["ghost"] = Ghost()
            root["doomed"] = PersistentMapping()
        with db.transaction() as conn:
            del conn.root()["doomed"]  # still current, no longer reachable
            conn.root()["a"]["x"] = 2  # an old revision
        db.close()
    finally:
        del sys.modules["ghostmodule"]
        transaction.abort()


def test_census_of_a_database_that_is_not_vfabs(tmp_path: Path) -> None:
    fs = tmp_path / "Data.fs"
    write_foreign_database(fs)
    c = take(sources.open_uri(f"file://{fs}"))
    counts = c.counts()
    assert counts["persistent.mapping.PersistentMapping"] == 1 + 2 + 300
    assert counts["BTrees.OOBTree.OOBTree"] == 1
    assert counts["BTrees.OOBTree.OOBucket"] >= 2
    assert counts["ghostmodule.Ghost"] == 1
    assert c.vfab is None
    assert c.revisions is not None and c.revisions.transactions == 3
    assert c.revisions.unreachable == 1
    assert c.objects == c.storage_len - 1  # type: ignore[operator]
    a = c.get("persistent.mapping.PersistentMapping")
    # The root was written three times (created by ZODB.DB, then two
    # commits), root["a"] twice; "doomed" is current though unreachable.
    assert a is not None and a.old_revisions == 3
    assert a.revisions == 303 + 1 + 3


@pytest.mark.subprocess
def test_census_cli_needs_no_class_and_writes_json(tmp_path: Path) -> None:
    fs = tmp_path / "Data.fs"
    write_foreign_database(fs)
    out = tmp_path / "census.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "scenarios.cli",
            "census",
            f"file://{fs}",
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={
            "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
            "PATH": "/usr/bin:/bin",
        },
    )
    assert proc.returncode == 0, proc.stderr
    assert "ghostmodule.Ghost" in proc.stdout
    data = json.loads(out.read_text())
    assert data["schema_version"] == CENSUS.version
    assert data["kind"] == "census"
    classes = {c["class"]: c for c in data["classes"]}
    assert classes["ghostmodule.Ghost"]["count"] == 1
    assert set(classes["ghostmodule.Ghost"]) == {
        "class",
        "count",
        "bytes",
        "revisions",
        "old_revisions",
    }
    assert data["objects"] == sum(c["count"] for c in data["classes"])
    assert data["pickle_bytes"] == sum(c["bytes"] for c in data["classes"])
    assert data["size_bytes"] == fs.stat().st_size
    assert data["history"]["unreachable"] == 1
    assert data["vfab"] is None and data["metadata"]["versions"]["ZODB"]


def test_census_cli_of_a_populated_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "d"
    assert run_cli(capsys, "populate", "--path", str(target), "-q").status == 0
    r = run_cli(capsys, "census", "--path", str(target), "--no-history")
    assert r.status == 0, r.err
    assert "vfab.model.ProcessStep" in r.out
    assert "vfab data set: scale 1, seed 2000, size small" in r.out
    assert "revisions: not read" in r.out
    # the .fs file itself works too
    r = run_cli(capsys, "census", "--path", str(target / "Data.fs"))
    assert r.status == 0 and "revisions" in r.out


def test_census_of_an_empty_database(tmp_path: Path) -> None:
    from ZODB.FileStorage import FileStorage

    FileStorage(str(tmp_path / "Data.fs"), create=True).close()
    c = take(sources.open_path("file", tmp_path))
    assert c.objects == 0 and c.tid is None and c.revisions is not None


@pytest.mark.server
def test_census_through_zeo_and_beside_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_leaked_servers: None
) -> None:
    target = tmp_path / "d"
    datadir.populate("file", target, DataSpec.for_size("small"), 5)
    on_disk = take(sources.open_path("file", target))
    with ZEOServer(target, filestorage_section(target)) as server:
        host, port = server.address
        out = tmp_path / "zeo.json"
        r = run_cli(
            capsys, "census", "--zeo-address", f"{host}:{port}", "--json", str(out)
        )
        assert r.status == 0, r.err
        data = json.loads(out.read_text())
        assert {c["class"]: c["count"] for c in data["classes"]} == on_disk.counts()
        assert data["history"]["records"] == on_disk.revisions.records  # type: ignore[union-attr]
        assert data["vfab"]["seed"] == 5

        # The Data.fs the server holds opens read-only, with a warning.
        r = run_cli(capsys, "census", "--path", str(target))
        assert r.status == 0, r.err
        assert "is open in another process (a ZEO server?)" in r.err
        total = next(ln for ln in r.out.splitlines() if ln.startswith("total"))
        assert total.split()[1] == f"{on_disk.objects:,}"


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        ([], "give exactly one of a URI, --path, --zeo-address or --storage-config"),
        (["file:///x", "--path", "."], "give exactly one of"),
        (["--storage", "file"], "--storage goes with --path"),
        (["foo://bar"], "no resolver for foo:// URIs; choose from"),
        (["not-a-uri"], "not a URI"),
        (["file:///nonexistent/Data.fs"], "no FileStorage at /nonexistent/Data.fs"),
        (["--path", "/nonexistent"], "/nonexistent does not exist"),
        (["--path", ".", "--storage", "memory"], "unknown storage 'memory' for a"),
        (["--path", "."], "no FileStorage at"),
        (["--zeo-address", "nohostport"], "bad ZEO address"),
    ],
)
def test_bad_input(
    args: list[str], fragment: str, empty_cwd: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert_bad_input(run_cli(capsys, "census", *args), fragment)
    assert not list(empty_cwd.iterdir())


def test_existing_json_is_not_replaced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fs = tmp_path / "Data.fs"
    write_foreign_database(fs)
    out = tmp_path / "c.json"
    out.write_text("precious")
    r = run_cli(capsys, "census", f"file://{fs}", "--json", str(out))
    assert_bad_input(r, "exists; use --force")
    assert out.read_text() == "precious"


def test_unreachable_zeo_address(capsys: pytest.CaptureFixture[str]) -> None:
    from storages.zeo import free_port

    r = run_cli(capsys, "census", "--zeo-address", f"127.0.0.1:{free_port()}")
    assert_bad_input(r, "cannot reach ZEO server")


def test_a_registered_directory_storage_works_without_census_changes(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """populate and census pick storages from the registry: a new directory
    storage (as bdb will be) needs no change here.  Stood in for by a
    FileStorage under another name, opened through the registry."""
    import storages
    from storages.file import FileFactory

    class Other(FileFactory):
        name = "other"

        # A storage that gives no read-only URI for a path (as bdb): the
        # census opens it through the registry, where populate wrote it.
        @classmethod
        def path_uri(cls, path: Path) -> str | None:
            return None

    monkeypatch.setitem(storages.REGISTRY, "other", Other)
    target = tmp_path / "d"
    r = run_cli(capsys, "populate", "--storage", "other", "--path", str(target))
    assert r.status == 0, r.err
    r = run_cli(capsys, "census", "--storage", "other", "--path", str(target))
    assert r.status == 0, r.err
    assert "vfab data set: scale 1, seed 2000, size small" in r.out
    # without --storage, the storage populate recorded there
    r = run_cli(capsys, "census", "--path", str(target), "--no-revisions")
    assert r.status == 0 and "ProcessStep" in r.out, r.err
    # ... but only in a directory populate wrote with that storage
    r = run_cli(capsys, "census", "--storage", "other", "--path", str(tmp_path))
    assert_bad_input(r, "holds no other data set written by vfab-bench populate")


def test_zeo_uri_unreachable_fails_fast(capsys: pytest.CaptureFixture[str]) -> None:
    from storages.zeo import free_port

    r = run_cli(capsys, "census", f"zeo://127.0.0.1:{free_port()}")
    assert_bad_input(r, "cannot reach ZEO server")


def test_census_agrees_with_zodb_analyze(tmp_path: Path) -> None:
    """ZODB's own analyze script (history only) counts the same records."""
    from ZODB.scripts import analyze

    target = tmp_path / "d"
    datadir.populate("file", target, DataSpec.for_size("small"), 3)
    c = take(sources.open_path("file", target))
    report = analyze.analyze(str(target / "Data.fs"))
    assert c.revisions is not None
    assert c.revisions.records == report.OIDS
    assert c.revisions.current == report.COIDS
    assert c.revisions.old == report.FOIDS
    assert c.pickle_bytes == report.CBYTES  # nothing unreachable here
    assert {x.name: x.revisions for x in c.classes} == report.TYPEMAP
