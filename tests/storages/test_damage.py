"""A damaged database is reported, never changed (issue 12, class 1).

The read-only checks (storages.file.check_filestorage, the bdb
environment check) in-process, then every command that opens an existing
database, as a user runs it: one line on stderr, exit status 2, the files
byte-identical afterwards.  tests/cli/test_failure_paths.py holds the lead's
cases (truncated and mid-file FileStorage, a bdb:// URI on no environment).
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from storages import CrashCutStorage, DamagedStorage, StorageError
from storages.file import check_filestorage
from tests.cli.test_failure_paths import assert_one_line, tree_digest, vfab_bench

TXN_HEADER = struct.Struct(">8sQcHHH")


@pytest.fixture
def file_set(populated_sets: Callable[[str], Path]) -> Path:
    return populated_sets("file")


@pytest.fixture
def bdb_set(populated_sets: Callable[[str], Path]) -> Path:
    from storages.bdb import berkeleydb_missing

    reason = berkeleydb_missing()
    if reason:
        pytest.skip(reason)
    return populated_sets("bdb")


def transactions(data: bytes) -> list[tuple[int, int]]:
    """(offset, length with the repeated length) of each transaction."""
    out, pos = [], 4
    while pos < len(data):
        tlen = TXN_HEADER.unpack_from(data, pos)[1]
        out.append((pos, tlen + 8))
        pos += tlen + 8
    return out


def edit(data: bytes, how: str) -> bytes:
    """*data* (a Data.fs) damaged as *how* says."""
    txns = transactions(data)
    last, last_len = txns[-1]
    blob = bytearray(data)
    if how == "bad status":
        blob[last + 16] = ord("x")
    elif how == "unfinished commit":  # the checkpoint flag of a commit in flight
        blob[last + 16] = ord("c")
    elif how == "bad length":
        blob[last + 8 : last + 16] = struct.pack(">Q", 10**12)
    elif how == "tid reduction":
        blob[last : last + 8] = b"\0" * 8
    elif how == "garbage pickle":
        start = last + 23 + 100  # inside the first records of the last one
        blob[start : start + 32] = b"\xfe" * 32
    elif how == "random bytes":
        blob = bytearray(os.urandom(len(data)))
    elif how == "empty":
        blob = bytearray()
    elif how == "cut inside the header":
        blob = blob[: last + 10]
    elif how == "cut inside the data":
        blob = blob[: last + last_len // 2]
    else:
        raise AssertionError(how)
    return bytes(blob)


FILE_DAMAGE = [
    "bad status",
    "bad length",
    "tid reduction",
    "garbage pickle",
    "random bytes",
    "empty",
]

#: What a crash during a commit leaves: the last transaction cut
#: (test_crash_recovery.py); refused as such, with --recover named.
CRASH_CUTS = ["unfinished commit", "cut inside the header", "cut inside the data"]


def copy_set(src: Path, dst: Path) -> Path:
    """The storage's files and the marker of the data set *src* (not the
    FileStorage scratch and lock files populate leaves)."""
    dst.mkdir()
    for entry in src.iterdir():
        if entry.name.endswith((".tmp", ".lock")):
            continue
        if entry.is_dir():
            shutil.copytree(entry, dst / entry.name)
        else:
            shutil.copyfile(entry, dst / entry.name)
    return dst


# -- the FileStorage check ------------------------------------------------------


def test_a_whole_filestorage_passes(file_set: Path) -> None:
    assert check_filestorage(file_set / "Data.fs") == 4


@pytest.mark.parametrize("how", FILE_DAMAGE)
def test_filestorage_damage_is_found(file_set: Path, tmp_path: Path, how: str) -> None:
    path = tmp_path / "Data.fs"
    path.write_bytes(edit((file_set / "Data.fs").read_bytes(), how))
    with pytest.raises(DamagedStorage) as e:
        check_filestorage(path)
    message = str(e.value)
    assert "\n" not in message
    assert "at byte" in message and "python -m ZODB.fsrecover" in message


@pytest.mark.parametrize("how", CRASH_CUTS)
def test_a_crash_cut_is_named_as_such(file_set: Path, tmp_path: Path, how: str) -> None:
    path = tmp_path / "Data.fs"
    data = edit((file_set / "Data.fs").read_bytes(), how)
    path.write_bytes(data)
    with pytest.raises(CrashCutStorage) as e:
        check_filestorage(path)
    message = str(e.value)
    last, _ = transactions((file_set / "Data.fs").read_bytes())[-1]
    assert "\n" not in message
    assert f"transaction 4 (at byte {last}, {len(data) - last} bytes)" in message
    assert "--recover" in message
    assert path.read_bytes() == data


def test_every_cut_between_transactions_is_found(
    file_set: Path, tmp_path: Path
) -> None:
    """A file cut anywhere but at a transaction's end is a cut last
    transaction (cut at an end, it is a whole, shorter FileStorage: nothing
    shows it was longer)."""
    data = (file_set / "Data.fs").read_bytes()
    ends = {pos + n for pos, n in transactions(data)}
    path = tmp_path / "Data.fs"
    cuts = [n for n in range(5, len(data), len(data) // 97) if n not in ends]
    for n in cuts:
        path.write_bytes(data[:n])
        with pytest.raises(CrashCutStorage, match="cut short"):
            check_filestorage(path)
    assert len(cuts) > 90


def test_a_commit_in_progress_is_no_damage_while_in_use(
    file_set: Path, tmp_path: Path
) -> None:
    data = (file_set / "Data.fs").read_bytes()
    path = tmp_path / "Data.fs"
    path.write_bytes(data[:-300])
    assert check_filestorage(path, in_use=True) == 3
    path.write_bytes(edit(data, "garbage pickle"))
    with pytest.raises(DamagedStorage):
        check_filestorage(path, in_use=True)


# -- the Berkeley DB check -----------------------------------------------------


def damage_bdb(env: Path, how: str) -> None:
    def rewrite(name: str, change: Callable[[bytearray], bytes]) -> None:
        path = env / name
        path.write_bytes(change(bytearray(path.read_bytes())))

    log = sorted(n.name for n in env.glob("log.*"))[-1]
    if how == "truncated zodb.db":
        rewrite("zodb.db", lambda b: bytes(b[: len(b) // 2 + 100]))
    elif how == "garbled zodb.db":

        def garble(b: bytearray) -> bytes:
            b[len(b) // 4 : len(b) // 4 + 8192] = os.urandom(8192)
            return bytes(b)

        rewrite("zodb.db", garble)
    elif how == "empty zodb.db":
        rewrite("zodb.db", lambda b: b"")
    elif how == "zodb.db cut to its first page":  # libdb crashes (SIGSEGV) on it
        rewrite("zodb.db", lambda b: bytes(b[:4096]))
    elif how == "truncated log":
        rewrite(log, lambda b: bytes(b[:1000]))
    elif how == "garbled log":

        def garble_log(b: bytearray) -> bytes:
            b[100:4196] = os.urandom(4096)
            return bytes(b)

        rewrite(log, garble_log)
    elif how == "no zodb.db":
        (env / "zodb.db").unlink()
        (env / "notes.txt").write_text("not a database\n")
    else:
        raise AssertionError(how)


BDB_DAMAGE = [
    "truncated zodb.db",
    "zodb.db cut to its first page",
    "garbled zodb.db",
    "empty zodb.db",
    "truncated log",
    "garbled log",
    "no zodb.db",
]


@pytest.mark.subprocess
def test_a_whole_bdb_environment_passes_and_is_left_as_it_was(bdb_set: Path) -> None:
    from storages.bdb import check_environment

    before = tree_digest(bdb_set)
    assert check_environment(bdb_set / "bdb") == 4
    assert tree_digest(bdb_set) == before


@pytest.mark.subprocess
@pytest.mark.parametrize("how", BDB_DAMAGE)
def test_bdb_damage_is_found(bdb_set: Path, tmp_path: Path, how: str) -> None:
    from storages.bdb import check_environment

    data = copy_set(bdb_set, tmp_path / "data")
    damage_bdb(data / "bdb", how)
    before = tree_digest(data)
    with pytest.raises(StorageError) as e:
        check_environment(data / "bdb")
    message = str(e.value)
    assert "\n" not in message
    if how == "no zodb.db":
        assert "not a Berkeley DB environment" in message
    else:
        assert isinstance(e.value, DamagedStorage)
        assert "db_recover" in message
    assert tree_digest(data) == before


def test_no_environment_is_created_where_there_is_none(tmp_path: Path) -> None:
    from storages.bdb import check_environment

    for path in (tmp_path / "missing", tmp_path):
        with pytest.raises(StorageError, match="not a Berkeley DB environment"):
            check_environment(path)
    assert list(tmp_path.iterdir()) == []


# -- the commands ----------------------------------------------------------------


def file_commands(data: Path) -> dict[str, list[str]]:
    return {
        "census --path": ["census", "--path", str(data)],
        "census file://": ["census", f"file://{data / 'Data.fs'}"],
        "serve": ["serve", "--storage", "file", "--path", str(data), "--port", "0"],
        "populate --overwrite": [
            "populate",
            *("--storage", "file", "--path", str(data), "--overwrite"),
        ],
        "serve --overwrite": [
            "serve",
            *("--storage", "file", "--path", str(data), "--port", "0"),
            *("--size", "medium", "--overwrite"),
        ],
    }


def bdb_commands(data: Path) -> dict[str, list[str]]:
    return {
        "census --path": ["census", "--path", str(data)],
        "census bdb://": ["census", f"bdb://{data / 'bdb'}"],
        "serve": ["serve", "--storage", "bdb", "--path", str(data), "--port", "0"],
        "populate --overwrite": [
            "populate",
            *("--storage", "bdb", "--path", str(data), "--overwrite"),
        ],
    }


def run_all(
    commands: dict[str, list[str]], data: Path, fragment: str
) -> Iterator[tuple[str, subprocess.CompletedProcess[str]]]:
    before = tree_digest(data)
    for name, args in commands.items():
        proc = vfab_bench(*args, timeout=120)
        yield name, proc
        assert_one_line(proc, fragment)
        assert tree_digest(data) == before, name


@pytest.mark.subprocess
@pytest.mark.parametrize("how", FILE_DAMAGE)
def test_commands_refuse_a_damaged_filestorage(
    file_set: Path, tmp_path: Path, how: str
) -> None:
    data = copy_set(file_set, tmp_path / "data")
    (data / "Data.fs").write_bytes(edit((data / "Data.fs").read_bytes(), how))
    for _name, proc in run_all(file_commands(data), data, "damaged"):
        assert "fsrecover" in proc.stderr


@pytest.mark.subprocess
@pytest.mark.parametrize("how", CRASH_CUTS[:2])
def test_commands_refuse_a_crash_cut_without_recover(
    file_set: Path, tmp_path: Path, how: str
) -> None:
    data = copy_set(file_set, tmp_path / "data")
    (data / "Data.fs").write_bytes(edit((data / "Data.fs").read_bytes(), how))
    for _name, proc in run_all(file_commands(data), data, "cut by a crash"):
        assert "--recover" in proc.stderr


@pytest.mark.subprocess
def test_serve_and_populate_refuse_a_locked_filestorage(
    file_set: Path, tmp_path: Path
) -> None:
    import zc.lockfile

    data = copy_set(file_set, tmp_path / "data")
    lock = zc.lockfile.LockFile(str(data / "Data.fs.lock"))  # another user
    try:
        commands = file_commands(data)
        del commands["census --path"], commands["census file://"]  # may read
        list(run_all(commands, data, "locked"))
    finally:
        lock.close()


@pytest.mark.subprocess
@pytest.mark.parametrize("how", BDB_DAMAGE)
def test_commands_refuse_a_damaged_bdb_environment(
    bdb_set: Path, tmp_path: Path, how: str
) -> None:
    data = copy_set(bdb_set, tmp_path / "data")
    damage_bdb(data / "bdb", how)
    fragment = "not a Berkeley DB" if how == "no zodb.db" else "damaged"
    for _name, proc in run_all(bdb_commands(data), data, fragment):
        if fragment == "damaged":
            assert "db_recover" in proc.stderr


@pytest.mark.subprocess
def test_census_of_foreign_files_under_bdb_path_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not a database\n")
    before = tree_digest(tmp_path)
    for args in (
        ["census", "--path", str(tmp_path), "--storage", "bdb"],
        ["populate", "--path", str(tmp_path), "--storage", "bdb"],
        ["serve", "--path", str(tmp_path), "--storage", "bdb", "--port", "0"],
    ):
        assert_one_line(vfab_bench(*args, timeout=60), str(tmp_path))
    assert tree_digest(tmp_path) == before


# -- what a URI or a configuration names (storages.checks) ----------------------


@pytest.fixture
def damaged_fs(file_set: Path, tmp_path: Path) -> Path:
    path = tmp_path / "Data.fs"
    path.write_bytes(edit((file_set / "Data.fs").read_bytes(), "bad status"))
    return path


@pytest.mark.parametrize(
    "section",
    [
        "<filestorage>\n path {path}\n</filestorage>",
        "<zodb>\n <filestorage>\n  path {path}\n </filestorage>\n</zodb>",
        "<demostorage>\n <filestorage base>\n  path {path}\n </filestorage>\n"
        "</demostorage>",
    ],
)
def test_check_config_finds_a_damaged_filestorage(
    damaged_fs: Path, section: str
) -> None:
    from storages.checks import check_config

    with pytest.raises(DamagedStorage, match="fsrecover"):
        check_config(section.format(path=damaged_fs))


def test_check_uri(damaged_fs: Path, file_set: Path, tmp_path: Path) -> None:
    from storages.checks import check_uri

    with pytest.raises(DamagedStorage):
        check_uri(f"file://{damaged_fs}?read_only=1")
    conf = tmp_path / "db.conf"
    conf.write_text(f"<filestorage main>\n path {damaged_fs}\n</filestorage>\n")
    with pytest.raises(DamagedStorage):
        check_uri(f"zconfig://{conf}#main")
    check_uri(f"file://{file_set / 'Data.fs'}")
    check_uri(f"file://{tmp_path / 'new.fs'}")  # created when opened
    with pytest.raises(StorageError, match="no FileStorage"):
        check_uri(f"file://{tmp_path / 'new.fs'}", must_exist=True)
    check_uri(f"bdb://{tmp_path / 'new-env'}")  # created when opened
    check_uri("zeo://127.0.0.1:9")  # a server's: nothing here to check
    assert sorted(p.name for p in tmp_path.iterdir()) == ["Data.fs", "db.conf"]


@pytest.mark.subprocess
def test_check_config_finds_a_damaged_bdb_environment(
    bdb_set: Path, tmp_path: Path
) -> None:
    from storages.checks import check_config

    data = copy_set(bdb_set, tmp_path / "data")
    damage_bdb(data / "bdb", "truncated zodb.db")
    before = tree_digest(data)
    with pytest.raises(DamagedStorage, match="db_recover"):
        check_config(
            f"%import storages.bdb\n<bdbstorage>\n path {data / 'bdb'}\n</bdbstorage>\n"
        )
    assert tree_digest(data) == before


@pytest.mark.subprocess
def test_census_of_a_zconfig_uri_on_a_damaged_file(
    damaged_fs: Path, tmp_path: Path
) -> None:
    conf = tmp_path / "db.conf"
    conf.write_text(f"<filestorage>\n path {damaged_fs}\n</filestorage>\n")
    before = tree_digest(tmp_path)
    assert_one_line(vfab_bench("census", f"zconfig://{conf}"), "damaged")
    assert tree_digest(tmp_path) == before


@pytest.mark.subprocess
def test_census_of_a_whole_filestorage_changes_nothing(
    file_set: Path, tmp_path: Path
) -> None:
    data = copy_set(file_set, tmp_path / "data")
    before = tree_digest(data)
    for args in (["census", "--path", str(data)], ["census", f"file://{data}/Data.fs"]):
        proc = vfab_bench(*args, timeout=120)
        assert proc.returncode == 0, proc.stderr
    assert tree_digest(data) == before
