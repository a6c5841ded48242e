"""Every route a database arrives by, with damaged and foreign databases.

Issue 21, item 1: whatever the route (census by --path, URI, --storage-config
or zconfig://; run --storage-uri and --storage-config; populate --overwrite;
serve --path; --target of scale, zeoloop, verify and the locustfile, as a
URI or a ZConfig file; composites: zlib+file), a damaged or foreign
database is refused with one line on stderr and exit status 2, no
traceback, every byte and the directory listing unchanged (no lock, tmp,
tr0 or index file created).

The matrix (routes x kinds of damage) and how one case runs, shared by
tests/cli/test_routes.py and tools/probe_routes.py (which tallies it per
command).  Real subprocesses, real databases written by `populate`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import traceback
from collections.abc import Callable
from pathlib import Path

from tests.support.damaged_databases import (
    STORAGE,
    cli,
    copy_set,
    damage_bdb,
    damage_fs,
    damage_sqlite,
    empty_bdb_env,
    foreign_sqlite,
)

ROOT = Path(__file__).resolve().parents[2]
LOCUST = str(Path(sys.executable).with_name("locust"))
#: A case that is refused takes a few seconds; one that runs is stopped.
TIMEOUT = 240


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


# -- kinds: how a case's database is laid out -----------------------------------------


@dataclasses.dataclass(frozen=True)
class Kind:
    name: str
    family: str
    #: lay the database out in work/data from the family's data set
    make: Callable[[Path, Path], None]
    #: what a route exits with: 2 (refused), 0 for the whole controls
    expect: int = 2

    @property
    def checked_in_a_child(self) -> bool:
        """A Berkeley DB environment holding a zodb.db is checked by a child
        process (storages/bdb/check.py: libdb may crash on a damaged file)."""
        return self.family == "bdb" and self.make is not _bdb_empty


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


def quick_cases() -> list[Case]:
    """Every route and every kind at least once, in about as many cases as
    there are kinds (the quick tier's share of the matrix): each kind on a
    route no case has taken yet where it can, then each route still left
    on its first kind.  locust's routes are left out: locust runs only as
    a child process (gevent patches the process that imports it)."""
    pool = [case for case in cases() if case.route.command != "locust"]
    chosen: list[Case] = []
    routes: set[str] = set()
    for kind in (*KINDS, *CONTROLS):
        of_kind = [case for case in pool if case.kind == kind]
        fresh = [c for c in of_kind if _route_id(c) not in routes]
        pick = (fresh or of_kind)[0]
        chosen.append(pick)
        routes.add(_route_id(pick))
    for case in pool:
        if _route_id(case) not in routes:
            chosen.append(case)
            routes.add(_route_id(case))
    return chosen


def _route_id(case: Case) -> str:
    return f"{case.route.command} {case.route.name}"


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


class _ServingStdout(io.StringIO):
    """The stdout of a command run in this process: its 'serving ... on'
    line stops it with SIGTERM, as _serve_or_run stops a child (main()
    has installed its handler by then: the command cleans up and ends)."""

    served = False

    def write(self, text: str) -> int:
        n = super().write(text)
        if not self.served and any(
            line.startswith("serving") for line in self.getvalue().splitlines()
        ):
            self.served = True
            signal.raise_signal(signal.SIGTERM)
        return n


def _in_process(argv: list[str], cwd: Path) -> tuple[int | None, str]:
    """_serve_or_run's (exit status, stderr) from vfab-bench's main() in
    this process, in *cwd*, with the environment and working directory put
    back after; a command still running after TIMEOUT is stopped with
    SIGTERM, as a child would be killed."""
    from scenarios.cli import main

    assert argv[:3] == cli(), argv
    environ, where = dict(os.environ), os.getcwd()
    os.environ.pop("VFAB_DEBUG", None)
    os.environ.pop("VFAB_CHECKED_TARGETS", None)
    out, err = _ServingStdout(), io.StringIO()
    lock, running, timed_out = threading.Lock(), [True], [False]

    def stop() -> None:
        with lock:
            if running[0]:
                timed_out[0] = True
                os.kill(os.getpid(), signal.SIGTERM)

    timer = threading.Timer(TIMEOUT, stop)
    os.chdir(cwd)
    timer.start()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status: int | None = main(argv[3:])
            except SystemExit as e:  # argparse
                status = int(e.code or 0)
            except Exception:  # what a child would print as a traceback
                traceback.print_exc()
                status = 1
            finally:
                with lock:
                    running[0] = False
    finally:
        timer.cancel()
        os.chdir(where)
        os.environ.clear()
        os.environ.update(environ)
    text = err.getvalue()
    if out.served:
        text += "\n(it served the database)"
    elif timed_out[0]:
        status = None
        text += "\n(timed out)"
    return status, text


def run_case(
    case: Case, bases: dict[str, Path], scratch: Path, in_process: bool = False
) -> Result:
    """Lay the case's database out in a fresh directory under *scratch*,
    run its command there (a child process, or *in_process* its main()),
    and say what it did to that directory."""
    work = Path(tempfile.mkdtemp(prefix="case-", dir=scratch))
    lay = Layout(work, case.kind.family)
    case.kind.make(bases[case.kind.family], lay.data)
    lay.conf.write_text(lay.zconfig())
    before = snapshot(work)
    run = _in_process if in_process else _serve_or_run
    status, err = run(case.route.argv(lay), work)
    after = snapshot(work)
    changed = sorted(
        {k for k in before if before[k] != after.get(k)}
        | {f"+{k}" for k in after if k not in before}
    )
    shutil.rmtree(work, ignore_errors=True)
    return Result(case, status, err, changed)
