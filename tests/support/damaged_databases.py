"""The damaged and foreign databases of tests/support/routes.py's matrix: data sets
written by `populate`, copied, then damaged the way each kind says."""

from __future__ import annotations

import os
import shutil
import sqlite3
import struct
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TXN_HEADER = struct.Struct(">8sQcHHH")

#: The storage names of populate and census --path, per family.
STORAGE = {
    "file": "file",
    "zlib+file": "zlib+file",
    "sqlite": "relstorage-sqlite",
    "bdb": "bdb",
}


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "scenarios.cli", *args]


# -- the databases ------------------------------------------------------------------


def populate(family: str, path: Path) -> Path:
    proc = subprocess.run(
        cli("populate", "-q", "--storage", STORAGE[family], "--path", str(path)),
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    if proc.returncode != 0:
        raise RuntimeError(f"populate {family} failed: {proc.stderr}")
    return path


def make_bases(directory: Path, families: list[str] | None = None) -> dict[str, Path]:
    """A small data set of each family, written by populate."""
    return {
        family: populate(family, directory / family.replace("+", "-"))
        for family in families or list(STORAGE)
    }


def copy_set(src: Path, dst: Path) -> None:
    """The database files and marker of a data set, without FileStorage's
    scratch and lock files (what a user would copy)."""
    dst.mkdir(parents=True)
    for entry in src.iterdir():
        if entry.name.endswith((".tmp", ".lock")):
            continue
        if entry.is_dir():
            shutil.copytree(entry, dst / entry.name)
        else:
            shutil.copyfile(entry, dst / entry.name)


def transactions(data: bytes) -> list[int]:
    """The offset of each transaction of a Data.fs."""
    out, pos = [], 4
    while pos < len(data):
        out.append(pos)
        pos += TXN_HEADER.unpack_from(data, pos)[1] + 8
    return out


def damage_fs(data_fs: Path, how: str) -> None:
    """The Data.fs (or its index) damaged as *how* says."""
    if how == "index only":
        swap_index_entries(Path(f"{data_fs}.index"))
        return
    if how == "index bytes":
        index = Path(f"{data_fs}.index")
        blob = bytearray(index.read_bytes())
        for i in range(len(blob) // 2, len(blob) // 2 + 8):
            blob[i] ^= 0xFF
        index.write_bytes(bytes(blob))
        return
    if how == "symlink loop":
        data_fs.unlink()
        Path(f"{data_fs}.index").unlink(missing_ok=True)
        os.symlink(data_fs.name, data_fs)
        return
    data = bytearray(data_fs.read_bytes())
    txns = transactions(bytes(data))
    second, last = txns[1], txns[-1]
    if how == "cut short":
        del data[int(len(data) * 0.6) :]
    elif how == "flipped tid":  # above the next transaction's
        data[second] ^= 0x01
    elif how == "unfinished":  # the crash-cut case: status still 'c'
        data[last + 16] = ord("c")
    elif how == "txn header byte":  # the user name's length
        data[second + 17] ^= 0xFF
    elif how == "data record byte":  # the first pickle's first byte
        _, _, _, ulen, dlen, elen = TXN_HEADER.unpack_from(data, second)
        data[second + TXN_HEADER.size + ulen + dlen + elen + 42] ^= 0x5A
    else:
        raise AssertionError(how)
    data_fs.write_bytes(bytes(data))


def swap_index_entries(index_path: Path) -> None:
    """An index that loads but sends two objects' reads to each other's
    records: what a stale or damaged Data.fs.index does."""
    from ZODB.fsIndex import fsIndex

    info = fsIndex.load(str(index_path))
    index = info["index"]
    oids = list(index.keys())
    a, b = oids[0], oids[len(oids) // 2]
    index[a], index[b] = index[b], index[a]
    index.save(info["pos"], str(index_path))


def foreign_sqlite(path: Path) -> None:
    """Another application's SQLite file where RelStorage keeps its own."""
    path.unlink(missing_ok=True)
    connection = sqlite3.connect(path)
    connection.executescript(
        "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT);"
        "INSERT INTO customers (name) VALUES ('ada'), ('grace');"
        "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer INTEGER);"
    )
    connection.commit()
    connection.close()


def damage_sqlite(path: Path) -> None:
    data = bytearray(path.read_bytes())
    for i in range(4096, min(len(data), 3 * 4096)):
        data[i] ^= 0xA5
    path.write_bytes(bytes(data))


def empty_bdb_env(env: Path) -> None:
    """A Berkeley DB environment with no tables: not a BDBStorage."""
    from berkeleydb import db

    env.mkdir(parents=True, exist_ok=True)
    handle = db.DBEnv()
    handle.open(
        str(env),
        db.DB_CREATE
        | db.DB_INIT_MPOOL
        | db.DB_INIT_TXN
        | db.DB_INIT_LOCK
        | db.DB_INIT_LOG,
    )
    handle.close()


def damage_bdb(env: Path) -> None:
    table = env / "zodb.db"
    data = bytearray(table.read_bytes())
    for i in range(len(data) // 2, len(data) // 2 + 4096):
        data[i] ^= 0xA5
    table.write_bytes(bytes(data))
