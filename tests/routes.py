"""Every route a database arrives by, with damaged and foreign databases.

Issue 21, item 1: whatever the route (census by --path, URI, --storage-config
or zconfig://; run --storage-uri and --storage-config; populate --overwrite;
serve --path; --target of scale, zeoloop, verify and the locustfile, as a
URI or a ZConfig file; composites: zlib+file), a damaged or foreign
database is refused with one line on stderr and exit status 2, no
traceback, every byte and the directory listing unchanged (no lock, tmp,
tr0 or index file created).

The matrix (routes x kinds of damage) and how one case runs, shared by
tests/test_routes.py and tools/probe_routes.py (which tallies it per
command).  Real subprocesses, real databases written by `populate`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import signal
import sqlite3
import struct
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCUST = str(Path(sys.executable).with_name("locust"))
TXN_HEADER = struct.Struct(">8sQcHHH")
#: A case that is refused takes a few seconds; one that runs is stopped.
TIMEOUT = 240

#: The storage names of populate and census --path, per family.
STORAGE = {
    "file": "file",
    "zlib+file": "zlib+file",
    "sqlite": "relstorage-sqlite",
    "bdb": "bdb",
}


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "scenarios.cli", *args]


def snapshot(directory: Path) -> dict[str, str]:
    """Every entry below *directory*: a symlink as its target, a directory
    as 'dir', a file as the digest of its bytes."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(directory):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = str(path.relative_to(directory))
            if path.is_symlink():
                out[rel] = "-> " + os.readlink(path)
            elif path.is_dir():
                out[rel] = "dir"
            else:
                out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


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


# -- kinds: how a case's database is laid out -----------------------------------------


@dataclasses.dataclass(frozen=True)
class Kind:
    name: str
    family: str
    #: lay the database out in work/data from the family's data set
    make: Callable[[Path, Path], None]
    #: what a route exits with: 2 (refused), 0 for the whole controls
    expect: int = 2


def _fs(how: str) -> Callable[[Path, Path], None]:
    def make(base: Path, data: Path) -> None:
        copy_set(base, data)
        damage_fs(data / "Data.fs", how)

    return make


def _sqlite(
    change: Callable[[Path], None], foreign: bool = False
) -> Callable[..., None]:
    def make(base: Path, data: Path) -> None:
        copy_set(base, data)
        if foreign:
            for path in (data / "relstorage").glob("*.sqlite3"):
                path.unlink()
        change(data / "relstorage" / "main.sqlite3")

    return make


def _bdb_damaged(base: Path, data: Path) -> None:
    copy_set(base, data)
    damage_bdb(data / "bdb")


def _bdb_empty(base: Path, data: Path) -> None:
    data.mkdir()
    empty_bdb_env(data / "bdb")


FS_KINDS = [
    "cut short",
    "flipped tid",
    "unfinished",
    "txn header byte",
    "data record byte",
    "index only",
    "index bytes",
    "symlink loop",
]
ZLIB_KINDS = ["cut short", "data record byte", "index only"]

KINDS = [
    *(Kind(how, "file", _fs(how)) for how in FS_KINDS),
    *(Kind(f"{how} (zlib+file)", "zlib+file", _fs(how)) for how in ZLIB_KINDS),
    Kind("foreign SQLite", "sqlite", _sqlite(foreign_sqlite, foreign=True)),
    Kind("damaged SQLite", "sqlite", _sqlite(damage_sqlite)),
    Kind("damaged BDB", "bdb", _bdb_damaged),
    Kind("empty BDB env", "bdb", _bdb_empty),
]

#: Controls: a whole database through census's read-only routes, which
#: must leave it byte for byte.
CONTROLS = [
    Kind(f"whole {family}", family, lambda base, data: copy_set(base, data), 0)
    for family in ("file", "zlib+file", "sqlite", "bdb")
]


# -- routes ----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Layout:
    """Where a case's database and ZConfig file are."""

    work: Path
    family: str

    @property
    def data(self) -> Path:
        return self.work / "data"

    @property
    def target(self) -> Path:
        """What a URI or a storage section names."""
        return {
            "file": self.data / "Data.fs",
            "zlib+file": self.data / "Data.fs",
            "sqlite": self.data / "relstorage",
            "bdb": self.data / "bdb",
        }[self.family]

    @property
    def uri(self) -> str:
        if self.family == "sqlite":
            return f"sqlite://?data_dir={self.target}&keep_history=false"
        scheme = {"file": "file", "zlib+file": "zlib+file", "bdb": "bdb"}
        return f"{scheme[self.family]}://{self.target}"

    @property
    def conf(self) -> Path:
        return self.work / "db.conf"

    def zconfig(self) -> str:
        target = self.target
        if self.family == "file":
            return f"<zodb>\n<filestorage>\n  path {target}\n</filestorage>\n</zodb>\n"
        if self.family == "zlib+file":
            return (
                "%import zc.zlibstorage\n<zodb>\n<zlibstorage>\n<filestorage>\n"
                f"  path {target}\n</filestorage>\n</zlibstorage>\n</zodb>\n"
            )
        if self.family == "sqlite":
            return (
                "%import relstorage\n<zodb>\n<relstorage>\n  keep-history false\n"
                f"  <sqlite3>\n    data-dir {target}\n  </sqlite3>\n</relstorage>\n"
                "</zodb>\n"
            )
        return (
            f"%import storages.bdb\n<zodb>\n<bdbstorage>\n  path {target}\n"
            "</bdbstorage>\n</zodb>\n"
        )


@dataclasses.dataclass(frozen=True)
class Route:
    command: str
    name: str
    families: tuple[str, ...]
    argv: Callable[[Layout], list[str]]

    @property
    def read_only(self) -> bool:
        return self.command == "census"


ALL = ("file", "zlib+file", "sqlite", "bdb")
LOAD = {
    "scale": ["--clients", "1", "--duration", "1", "--warmup", "0", "-q"],
    "zeoloop": ["--users", "1", "--processes", "1", "--duration", "1"],
    "verify": ["--clients", "1", "--budget", "2", "--no-scenarios", "-q"],
}
LOCUST_ARGS = ["--headless", "-u", "1", "-r", "1", "-t", "2s", "--only-summary"]
QUICK = ["--preset", "quick", "-q"]


def _target(
    command: str, spec: Callable[[Layout], str]
) -> Callable[[Layout], list[str]]:
    if command == "locust":
        locustfile = str(ROOT / "locustfile.py")
        return lambda lay: [
            LOCUST,
            "-f",
            locustfile,
            *LOCUST_ARGS,
            "--target",
            spec(lay),
        ]
    return lambda lay: cli(command, "--target", spec(lay), *LOAD[command])


ROUTES = [
    Route(
        "census",
        "--path",
        ALL,
        lambda lay: cli(
            "census", "--path", str(lay.data), "--storage", STORAGE[lay.family]
        ),
    ),
    Route("census", "URI", ALL, lambda lay: cli("census", lay.uri)),
    Route(
        "census",
        "--storage-config",
        ALL,
        lambda lay: cli("census", "--storage-config", str(lay.conf)),
    ),
    Route(
        "census", "zconfig://", ALL, lambda lay: cli("census", f"zconfig://{lay.conf}")
    ),
    Route(
        "run",
        "--storage-uri",
        ALL,
        lambda lay: cli("run", "--storage-uri", lay.uri, *QUICK),
    ),
    Route(
        "run",
        "--storage-config",
        ALL,
        lambda lay: cli("run", "--storage-config", str(lay.conf), *QUICK),
    ),
    Route(
        "populate",
        "--path --overwrite",
        ALL,
        lambda lay: cli(
            "populate",
            "-q",
            "--storage",
            STORAGE[lay.family],
            "--path",
            str(lay.data),
            "--overwrite",
        ),
    ),
    Route(
        "serve",
        "--path",
        ("file", "sqlite", "bdb"),
        lambda lay: cli(
            "serve",
            "--storage",
            STORAGE[lay.family],
            "--path",
            str(lay.data),
            "--port",
            "0",
        ),
    ),
    *(
        Route(c, "--target CONF", ALL, _target(c, lambda lay: str(lay.conf)))
        for c in ("scale", "zeoloop", "verify", "locust")
    ),
    # One process opens a file:// or bdb:// target: scale and zeoloop with one client.
    *(
        Route(c, "--target URI", ALL, _target(c, lambda lay: lay.uri))
        for c in ("scale", "zeoloop")
    ),
    *(
        Route(c, "--target URI", ("sqlite",), _target(c, lambda lay: lay.uri))
        for c in ("verify", "locust")
    ),
]


@dataclasses.dataclass(frozen=True)
class Case:
    route: Route
    kind: Kind

    @property
    def id(self) -> str:
        return f"{self.route.command} {self.route.name} [{self.kind.name}]"


def cases() -> list[Case]:
    out = [Case(r, k) for k in KINDS for r in ROUTES if k.family in r.families]
    out += [
        Case(r, k)
        for k in CONTROLS
        for r in ROUTES
        if r.read_only and k.family in r.families
    ]
    return out


# -- running one --------------------------------------------------------------------


@dataclasses.dataclass
class Result:
    case: Case
    status: int | None
    err: str
    changed: list[str]

    def problems(self) -> list[str]:
        """What breaks the contract (empty: handled)."""
        out = []
        if self.status != self.case.kind.expect:
            out.append(f"exit {self.status}")
        if "Traceback" in self.err:
            out.append("traceback")
        lines = self.err.strip().splitlines()
        if self.case.kind.expect == 2:
            if self.case.route.command == "locust":
                # locust's own log lines come first; ours is the one ERROR.
                errors = [line for line in lines if "/ERROR/" in line]
                if len(errors) != 1:
                    out.append(f"{len(errors)} error lines on stderr")
            elif len(lines) != 1:
                out.append(f"{len(lines)} lines on stderr")
        if self.changed:
            out.append("changed: " + ", ".join(self.changed[:6]))
        return out


def _serve_or_run(argv: list[str], cwd: Path) -> tuple[int | None, str]:
    """(exit status, stderr); a server that starts serving (its 'serving
    ... on' line) took the database: it is stopped with SIGTERM."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("VFAB_DEBUG", None)
    env.pop("VFAB_CHECKED_TARGETS", None)
    with tempfile.TemporaryFile("w+") as errfile:
        proc = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=errfile,
            stdin=subprocess.DEVNULL,
            text=True,
            cwd=cwd,
            env=env,
        )
        assert proc.stdout is not None
        served = False
        timer = threading.Timer(TIMEOUT, proc.kill)
        timer.start()
        try:
            for line in proc.stdout:
                if line.startswith("serving") and not served:
                    served = True
                    proc.send_signal(signal.SIGTERM)
            status: int | None = proc.wait()
        finally:
            timer.cancel()
        errfile.seek(0)
        err = errfile.read()
    if served:
        err += "\n(it served the database)"
    elif status == -signal.SIGKILL:
        status = None
        err += "\n(timed out)"
    return status, err


def run_case(case: Case, bases: dict[str, Path], scratch: Path) -> Result:
    """Lay the case's database out in a fresh directory under *scratch*,
    run its command there, and say what it did to that directory."""
    work = Path(tempfile.mkdtemp(prefix="case-", dir=scratch))
    lay = Layout(work, case.kind.family)
    case.kind.make(bases[case.kind.family], lay.data)
    lay.conf.write_text(lay.zconfig())
    before = snapshot(work)
    status, err = _serve_or_run(case.route.argv(lay), work)
    after = snapshot(work)
    changed = sorted(
        {k for k in before if before[k] != after.get(k)}
        | {f"+{k}" for k in after if k not in before}
    )
    shutil.rmtree(work, ignore_errors=True)
    return Result(case, status, err, changed)
