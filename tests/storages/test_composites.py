"""The storage contract: every registered storage and every composite
(zlib+NAME, zeo, zeo+bdb) refuses a damaged base, writing nothing.

A composite forwards every hook a caller asks before opening
(storages.composite.FORWARDED) to its base; a composite that skipped
check_existing once let zlib+file open a truncated Data.fs read-write,
which FileStorage silently cuts short.  In-process: each factory's
check_existing on a damaged base.  As a user runs it: populate, census,
serve and run on a damaged base, one line on stderr, exit status 2, bytes
and directory listing unchanged.
"""

from __future__ import annotations

import hashlib
import inspect
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import storages
from storages.base import StorageFactory
from storages.composite import FORWARDED, CompositeFactory, root_base
from storages.errors import DamagedStorage
from storages.zlib import zlib_of
from tests.cli.test_failure_paths import assert_one_line, vfab_bench
from tests.storages.test_damage import damage_bdb


def snapshot(directory: Path) -> dict[str, str]:
    """Every entry below *directory*: files by content, directories by
    name, so that a file or directory created, removed or changed shows."""
    out = {}
    for path in sorted(directory.rglob("*")):
        name = str(path.relative_to(directory))
        if path.is_dir():
            out[name + "/"] = "dir"
        else:
            out[name] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def every_factory() -> dict[str, type[StorageFactory]]:
    """Every registered storage, and zlib+NAME over each one that wraps."""
    found = dict(storages.REGISTRY)
    for factory in storages.REGISTRY.values():
        if factory.wraps_storage:
            composite = zlib_of(factory)
            found.setdefault(composite.name, composite)
    return found


def composites() -> list[type[StorageFactory]]:
    return [f for f in every_factory().values() if issubclass(f, CompositeFactory)]


# -- how a base is damaged: one entry per storage that keeps files ------------


def cut_filestorage(directory: Path) -> None:
    """Data.fs cut inside its last transaction (FileStorage, opened
    read-write, would cut it back to the one before, silently)."""
    path = directory / "Data.fs"
    data = path.read_bytes()
    path.write_bytes(data[:-10])


def truncate_bdb(directory: Path) -> None:
    damage_bdb(directory / "bdb", "truncated zodb.db")


def truncate_sqlite(directory: Path) -> None:
    path = directory / "relstorage" / "main.sqlite3"
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


#: Root base (where the data lives) -> how to damage what it wrote.
DAMAGE: dict[str, Callable[[Path], None]] = {
    "file": cut_filestorage,
    "bdb": truncate_bdb,
    "relstorage-sqlite": truncate_sqlite,
    "relstorage-sqlite-hp": truncate_sqlite,
}


def write_base(factory: type[StorageFactory], directory: Path) -> None:
    """A few committed transactions of *factory*'s own in *directory*."""
    from persistent.mapping import PersistentMapping

    with factory().open(directory) as store:
        root = store.root()
        for i in range(3):
            root[f"n{i}"] = PersistentMapping(value=i)
            store.commit()


def test_every_storage_that_keeps_files_can_be_damaged_here() -> None:
    """A new storage with files gets its damage here, and so its turn in
    every test below."""
    with_files = {
        root_base(f).name for f in every_factory().values() if f.keeps_directory
    }
    assert with_files <= set(DAMAGE), with_files - set(DAMAGE)


def test_composites_forward_every_hook_asked_before_opening() -> None:
    """Every public hook of StorageFactory but those a composite answers
    itself (open, served_section, share) is forwarded: a hook added to the
    contract fails here until a composite forwards it."""
    hooks = {
        name
        for name, value in vars(StorageFactory).items()
        if inspect.isfunction(value) and not name.startswith("_")
    }
    assert hooks - {"open", "served_section", "share"} == set(FORWARDED)
    assert {f.name for f in composites()} >= {"zlib+file", "zeo", "zeo+bdb"}
    for factory in composites():
        for hook in FORWARDED:
            assert getattr(factory, hook) is not getattr(StorageFactory, hook)


#: The contract a storage module implements (issue 27): what generic code
#: outside storages/ calls, or storages.named and storages.checks ask of a
#: database a user names.  Changing it changes docs/storages.md too.
DECLARED = {
    "name",
    "description",
    "option_groups",
    "has_database",
    "keeps_directory",
    "starts_server",
    "user_errors",
    "not_storage",
    "summary_rows",
    "uri_schemes",
}
DERIVED = {"servable", "shared", "wraps_storage"}
HOOKS = {
    "open",
    "unavailable",
    "preflight",
    "running",
    "share",
    "served_section",
    "check_existing",
    "check_at",
    "held_at",
    "path_uri",
    "uri_opener",
    "file_kind",
    "report_note",
}


def test_the_contract_is_what_generic_code_asks() -> None:
    attributes = {
        name
        for name, value in vars(StorageFactory).items()
        if not name.startswith("_")
        and not callable(value)
        and not isinstance(value, classmethod)
    } | set(StorageFactory.__annotations__)
    hooks = {
        name
        for name, value in vars(StorageFactory).items()
        if not name.startswith("_")
        and (inspect.isfunction(value) or isinstance(value, classmethod))
    }
    assert attributes == DECLARED | DERIVED
    assert hooks == HOOKS


def test_capabilities_are_derived_from_the_hooks_a_factory_implements() -> None:
    """servable, shared and wraps_storage are never declared: implementing
    served_section(), share() or an open() that takes wrap says them."""
    from storages.mapping import MappingFactory

    class Plain(StorageFactory):
        name = "plain"
        description = "nothing but open"

        def open(self, directory: Path) -> storages.Store:
            raise NotImplementedError

    class Everything(Plain):
        def open(self, directory: Path, wrap: object = None) -> storages.Store:
            raise NotImplementedError

        def served_section(self, directory: Path) -> tuple[str, tuple[str, ...]]:
            return "", ()

        def share(self, directory: Path) -> Any:
            raise NotImplementedError

    assert (Plain.servable, Plain.shared, Plain.wraps_storage) == (False,) * 3
    capabilities = (Everything.servable, Everything.shared, Everything.wraps_storage)
    assert capabilities == (True,) * 3
    assert MappingFactory.wraps_storage and not MappingFactory.servable


def test_a_composite_has_its_bases_options_errors_and_files() -> None:
    """What a composite has of its base's is derived: its own and the
    base's option groups, user errors and files that are not the storage;
    keeps_directory the base's unless it says otherwise."""
    import dataclasses

    class Oops(Exception):
        pass

    @dataclasses.dataclass(frozen=True)
    class BaseOptions(storages.OptionGroup):
        pass

    class Base(StorageFactory):
        name = "base"
        description = "a base"
        option_groups = (storages.DBOptions, BaseOptions)
        keeps_directory = True
        user_errors = (Oops,)
        not_storage = (".scratch",)

        def open(self, directory: Path, wrap: object = None) -> storages.Store:
            raise NotImplementedError

    class Front(CompositeFactory):
        name = "front"
        description = "in front"
        base = Base
        not_storage = (".front",)

    class Server(Front):
        name = "server"
        keeps_directory = False

    assert Front.option_groups == (storages.DBOptions, BaseOptions)
    assert Front.user_errors == (Oops,)
    assert set(Front.not_storage) == {".front", ".scratch"}
    assert Front.keeps_directory and not Server.keeps_directory
    zlib = zlib_of(Base)
    assert (zlib.not_storage, zlib.user_errors) == ((".scratch",), (Oops,))
    assert zlib.option_groups == (storages.DBOptions, BaseOptions)


def damaged_cases() -> list[object]:
    cases = []
    for name, factory in every_factory().items():
        base = root_base(factory)
        marks = []
        if base.name not in DAMAGE:
            marks.append(pytest.mark.skip(reason=f"{name}: its base keeps no files"))
        if base.name == "bdb":  # checked by a child process (storages/bdb/check.py)
            marks.append(pytest.mark.subprocess)
        cases.append(pytest.param(name, id=name, marks=marks))
    return cases


@pytest.mark.parametrize("name", damaged_cases())
def test_check_existing_refuses_a_damaged_base(name: str, tmp_path: Path) -> None:
    factory = every_factory()[name]
    base = root_base(factory)
    reason = factory().unavailable() or base().unavailable()
    if reason:
        pytest.skip(reason)
    data = tmp_path / "data"
    data.mkdir()
    write_base(base, data)
    factory().check_existing(data)  # whole: passes
    DAMAGE[base.name](data)
    before = snapshot(data)
    with pytest.raises(DamagedStorage) as e:
        factory().check_existing(data)
    # A Data.fs cut short is named a crash's cut (CrashCutStorage), the
    # other damage "damaged": refused either way, one line, nothing changed.
    text = str(e.value)
    assert ("damaged" in text or "cut by a crash" in text) and "\n" not in text
    assert snapshot(data) == before


@pytest.mark.parametrize("name", sorted(every_factory()))
def test_check_existing_writes_nothing_where_there_is_nothing(
    name: str, tmp_path: Path
) -> None:
    """On an empty directory a check passes or refuses (no database there),
    and creates nothing."""
    factory = every_factory()[name]
    if factory().unavailable():
        pytest.skip(factory().unavailable() or "")
    try:
        factory().check_existing(tmp_path)
    except storages.StorageError as e:
        assert "\n" not in str(e)
    assert list(tmp_path.iterdir()) == []


# -- the commands, as a user runs them ------------------------------------------


def path_storages() -> list[str]:
    from scenarios.data.datadir import path_storages

    return path_storages()


@pytest.fixture
def populated(populated_sets: Callable[[str], Path]) -> Callable[[str], Path]:
    """name -> a data set `populate` wrote with that storage (made once)."""
    return populated_sets


def damaged_copy(src: Path, dst: Path, name: str) -> Path:
    """A copy of the data set *src* of storage *name* (without FileStorage's
    scratch and lock files), its base damaged."""
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("*.tmp", "*.lock"))
    DAMAGE[root_base(storages.REGISTRY[name]).name](dst)
    return dst


def commands(name: str, data: Path) -> dict[str, list[str]]:
    """What opens the data set of storage *name* at *data*: census,
    populate --overwrite, and serve where runzeo can serve it."""
    found = {
        "census --path": ["census", "--path", str(data), "--storage", name],
        "populate --overwrite": [
            *("populate", "--storage", name, "--path", str(data), "--overwrite"),
        ],
    }
    if storages.REGISTRY[name].servable:
        found["serve"] = ["serve", "--storage", name, "--path", str(data)]
        found["serve"] += ["--port", "0"]
    return found


@pytest.mark.subprocess
@pytest.mark.parametrize("name", path_storages())
def test_commands_refuse_a_damaged_base(
    name: str, populated: Callable[[str], Path], tmp_path: Path
) -> None:
    factory = storages.get(name)
    if factory.unavailable():
        pytest.skip(factory.unavailable() or "")
    data = damaged_copy(populated(name), tmp_path / "data", name)
    before = snapshot(data)
    for what, args in commands(name, data).items():
        proc = vfab_bench(*args, timeout=120)
        assert_one_line(proc, "damaged")
        assert snapshot(data) == before, what


@pytest.mark.subprocess
def test_run_refuses_a_damaged_base_behind_a_wrapper(
    populated: Callable[[str], Path], tmp_path: Path
) -> None:
    """run on a database the user names (--storage-config, --storage-uri)
    with a damaged FileStorage below zlibstorage, a <zodb>, or as a URI."""
    data = damaged_copy(populated("file"), tmp_path / "data", "file")
    fs = data / "Data.fs"
    config = tmp_path / "zlib.conf"
    config.write_text(
        "%import zc.zlibstorage\n<zodb theirs>\n <zlibstorage>\n  <filestorage>\n"
        f"   path {fs}\n  </filestorage>\n </zlibstorage>\n</zodb>\n"
    )
    before = snapshot(data)
    for option in (
        ["--storage-config", str(config)],
        ["--storage-uri", f"theirs=file://{fs}"],
    ):
        proc = vfab_bench("run", *option, "--preset", "quick", "-q", timeout=120)
        assert_one_line(proc, "damaged")
        assert snapshot(data) == before, option
