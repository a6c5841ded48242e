"""PostgreSQL for RelStorage: relstorage-pg and relstorage-pg-hp
(FACTORIES), on a server the suite starts, or the user's (--pg-dsn).

PostgreSQLServer runs Debian's PostgreSQL (the binaries under
/usr/lib/postgresql/*/bin, newest first; VFAB_PG_BINDIR overrides) in a
temporary directory: initdb -A trust --no-sync, then ``postgres`` itself as
a child of the suite on 127.0.0.1 (-c listen_addresses, -p PORT, -k
SOCKDIR), stopped with pg_ctl -m fast -w.  initdb and postgres refuse to
run as root: as root, initdb and pg_ctl run through ``runuser -u
postgres`` and the server with Popen(user="postgres"), and the directory
belongs to postgres.  The server is not started with ``pg_ctl start``:
pg_ctl detaches it, and a detached server cannot be told to stop when the
suite dies (PR_SET_PDEATHSIG holds only for a direct child).

PostgreSQLDatabases makes and drops the per-trial databases, on that server
or on one the user names with a libpq DSN.
"""

from __future__ import annotations

import argparse
import dataclasses
import glob
import os
import pwd
import shutil
import signal
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

from storages.base import DBOptions, OptionGroup, StorageError, URIScheme
from storages.ports import LOCALHOST, host_port, is_loopback
from storages.relstorage import drivers
from storages.relstorage.drivers import driver_type
from storages.relstorage.dsn import format_dsn, parse_dsn
from storages.relstorage.factory import _ServerFactory
from storages.relstorage.options import port_type, redact
from storages.relstorage.servers import ServerProcess, TrialDatabases, run_tool

#: The superuser initdb creates (-U), and the role RelStorage connects as.
SUPERUSER = "postgres"
#: The operating-system account that runs the server when the suite is root.
OS_USER = "postgres"
#: pg_hba.conf rules a server on an address other than loopback gets: any
#: client, any host, no password (what the loopback rules of -A trust say).
REMOTE_TRUST = (
    "# vfab: a server on an exposed address takes every host",
    "host all all 0.0.0.0/0 trust",
    "host all all ::/0 trust",
)


@dataclasses.dataclass(frozen=True)
class PGOptions(OptionGroup):
    """Options of relstorage-pg and relstorage-pg-hp.

    pg_dsn: a libpq DSN (key=value or postgresql://) of a PostgreSQL server
        to use instead of starting one; a role allowed to CREATE DATABASE.
    pg_port: port of the server the suite starts (0: a free one).
    pg_driver: psycopg2 or pg8000 (None: psycopg2 when installed).
    """

    title: ClassVar[str] = "RelStorage on PostgreSQL (relstorage-pg, -pg-hp)"
    #: The password masked.
    JSON_AS: ClassVar[dict[str, Any]] = {"pg_dsn": redact}

    pg_dsn: str | None = None
    pg_port: int = 0
    pg_driver: str | None = None

    @classmethod
    def add_arguments(cls, group: argparse._ArgumentGroup) -> None:
        group.add_argument(
            "--pg-dsn",
            metavar="DSN",
            help="use this PostgreSQL server (libpq DSN or postgresql:// URI; a "
            "role allowed to CREATE DATABASE) instead of starting one; the suite "
            "creates and drops only databases named vfab_<8 hex>_*",
        )
        group.add_argument(
            "--pg-port",
            type=port_type,
            default=0,
            metavar="N",
            help="port of the PostgreSQL the suite starts on 127.0.0.1 "
            "(default: a free port)",
        )
        group.add_argument(
            "--pg-driver",
            type=driver_type("postgresql"),
            metavar="psycopg2|pg8000",
            help="PostgreSQL driver (default: psycopg2 when installed)",
        )


def find_bindir() -> Path:
    """The directory holding initdb, postgres and pg_ctl; StorageError with
    what to install when there is none."""
    candidates = []
    if os.environ.get("VFAB_PG_BINDIR"):
        candidates.append(os.environ["VFAB_PG_BINDIR"])
    # Newest version first: /usr/lib/postgresql/15/bin before 9.6's.
    found = glob.glob("/usr/lib/postgresql/*/bin")
    found.sort(
        key=lambda p: [int(x) for x in Path(p).parent.name.split(".") if x.isdigit()]
    )
    candidates += reversed(found)
    initdb = shutil.which("initdb")
    if initdb:
        candidates.append(str(Path(initdb).parent))
    for directory in candidates:
        if all(
            (Path(directory) / tool).is_file()
            for tool in ("initdb", "postgres", "pg_ctl")
        ):
            return Path(directory)
    raise StorageError(
        "PostgreSQL server binaries not found (initdb, postgres, pg_ctl in "
        "/usr/lib/postgresql/*/bin or on PATH): install Debian's postgresql "
        "or run ./bootstrap --servers"
    )


def available() -> str | None:
    """None when a PostgreSQL server can be started here, else why not."""
    try:
        find_bindir()
    except StorageError as e:
        return str(e)
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(OS_USER)
        except KeyError:
            return f"running as root and there is no {OS_USER!r} user to run PostgreSQL"
    return None


class PostgreSQLServer(ServerProcess):
    """A throwaway PostgreSQL cluster on 127.0.0.1, trust authentication,
    superuser "postgres".

    *settings* become ``-c name=value`` options (e.g. {"fsync": "off"}); the
    defaults are PostgreSQL's own.  Not for data anyone wants to keep: the
    cluster is initialised without syncing (--no-sync) and deleted on stop()
    when the suite chose the directory.
    """

    product = "PostgreSQL"
    root_runs_as = OS_USER  # initdb refuses root
    # SIGINT is PostgreSQL's fast shutdown (SIGTERM waits for clients).
    death_signal = signal.SIGINT

    def __init__(
        self,
        directory: Path | str | None = None,
        host: str = LOCALHOST,
        port: int = 0,
        bindir: Path | str | None = None,
        settings: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(directory, host, port)
        self.bindir = Path(bindir) if bindir is not None else None
        self.settings = dict(settings or {})
        self._owner: pwd.struct_passwd | None = None

    @property
    def data_dir(self) -> Path:
        assert self.directory is not None
        return self.directory / "data"

    socket_name = len("/.s.PGSQL.65535")

    @property
    def socket_dir(self) -> Path:
        assert self.socket_home is not None
        return self.socket_home

    def _socket_home(self, directory: Path) -> Path:
        home = super()._socket_home(directory)
        if self._owner is not None:  # a start after stop(): owned anew
            os.chown(home, self._owner.pw_uid, self._owner.pw_gid)
        return home

    def _as_owner(self, argv: list[str]) -> list[str]:
        if self._owner is None:
            return argv
        return ["runuser", "-u", self._owner.pw_name, "--", *argv]

    def _initialize(self) -> None:
        if self.bindir is None:
            self.bindir = find_bindir()
        missing = [
            tool
            for tool in ("initdb", "postgres", "pg_ctl")
            if not (self.bindir / tool).is_file()
        ]
        if missing:
            raise StorageError(
                f"PostgreSQL binaries missing in {self.bindir}: {', '.join(missing)}"
            )
        self._owner = self._server_user()
        assert self.directory is not None
        for path in (self.data_dir, self.socket_dir):
            path.mkdir(mode=0o700, exist_ok=True)
        if self._owner is not None:
            uid, gid = self._owner.pw_uid, self._owner.pw_gid
            for path in (self.directory, self.data_dir, self.socket_dir):
                os.chown(path, uid, gid)
            # The server appends to its log through the descriptor we open;
            # pg_ctl needs only the data directory.
        if (self.data_dir / "PG_VERSION").exists():
            return  # a directory the caller gave us, initialised before
        run_tool(
            self._as_owner(
                [
                    str(self.bindir / "initdb"),
                    "-D",
                    str(self.data_dir),
                    "-A",
                    "trust",
                    "-U",
                    SUPERUSER,
                    "-E",
                    "UTF8",
                    "--locale=C",
                    "--no-sync",
                ]
            ),
            f"initdb in {self.data_dir}",
        )

    def _command(self) -> list[str]:
        assert self.bindir is not None
        if not is_loopback(self.host):
            self._trust_remote()
        argv = [
            str(self.bindir / "postgres"),
            "-D",
            str(self.data_dir),
            "-p",
            str(self.port),
            "-k",
            str(self.socket_dir),
            "-c",
            f"listen_addresses={self.host}",
        ]
        for name, value in self.settings.items():
            argv += ["-c", f"{name}={value}"]
        return argv

    def _trust_remote(self) -> None:
        """Let clients of other hosts in, unauthenticated, as the loopback
        ones are (initdb -A trust writes rules for 127.0.0.1 and ::1 only,
        so a server on another address refused even this machine's clients:
        "no pg_hba.conf entry").  `serve --host` warns that it is exposed."""
        hba = self.data_dir / "pg_hba.conf"
        text = hba.read_text()
        if REMOTE_TRUST[0] in text:
            return
        hba.write_text(text.rstrip("\n") + "\n" + "\n".join(REMOTE_TRUST) + "\n")

    def _popen_user(self) -> dict[str, Any]:
        if self._owner is None:
            return {}
        return {
            "user": self._owner.pw_uid,
            "group": self._owner.pw_gid,
            "extra_groups": [],
        }

    def _ready(self) -> bool:
        # What pg_ctl -w reads: postmaster.pid's 8th line says "ready" once
        # the server accepts connections.
        try:
            lines = (self.data_dir / "postmaster.pid").read_text().splitlines()
        except OSError:
            return False
        return (
            len(lines) >= 8
            and self.process is not None
            and lines[0].strip() == str(self.process.pid)
            and lines[7].strip() == "ready"
        )

    def _shutdown(self, process: subprocess.Popen[bytes]) -> None:
        assert self.bindir is not None
        run_tool(
            self._as_owner(
                [
                    str(self.bindir / "pg_ctl"),
                    "stop",
                    "-D",
                    str(self.data_dir),
                    "-m",
                    "fast",
                    "-w",
                    "-t",
                    "60",
                ]
            ),
            "pg_ctl stop",
        )

    def dsn(self, dbname: str = "postgres") -> str:
        """A libpq DSN (key=value, as RelStorage's pg8000 driver wants it)."""
        return format_dsn(
            {
                "host": self.host,
                "port": str(self.port),
                "user": SUPERUSER,
                "dbname": dbname,
            }
        )

    def databases(self, prefix: str = "vfab_trial_") -> PostgreSQLDatabases:
        return PostgreSQLDatabases(
            self.dsn(), prefix=prefix, counter=self.database_counter
        )


def admin_connect(dsn: str) -> Any:
    """An autocommit connection (psycopg2, else pg8000); StorageError with
    the server's one-line reason when it cannot connect."""
    parts = parse_dsn(dsn)
    where = host_port(parts.get("host", "local socket"), parts.get("port", 5432))
    try:
        import psycopg2
    except ImportError:
        psycopg2 = None
    if psycopg2 is not None:
        try:
            conn = psycopg2.connect(format_dsn(parts), connect_timeout=10)
        except psycopg2.Error as e:
            raise StorageError(
                f"cannot connect to PostgreSQL at {where}: {first_line(e)}"
            ) from None
        conn.autocommit = True
        return conn
    try:
        import pg8000.dbapi
    except ImportError:
        raise StorageError(
            "no PostgreSQL driver installed (psycopg2 or pg8000): "
            "pip install 'vfab-loadtest[relstorage]'"
        ) from None
    kwargs: dict[str, Any] = {
        "user": parts.get("user", SUPERUSER),
        "host": parts.get("host", "localhost"),
        "port": int(parts.get("port", 5432)),
        "database": parts.get("dbname", "postgres"),
        "timeout": 10,
    }
    if "password" in parts:
        kwargs["password"] = parts["password"]
    try:
        conn = pg8000.dbapi.connect(**kwargs)
    except (pg8000.dbapi.Error, OSError) as e:
        raise StorageError(
            f"cannot connect to PostgreSQL at {where}: {first_line(e)}"
        ) from None
    conn.autocommit = True
    return conn


def first_line(error: BaseException) -> str:
    """The first meaningful line of a driver's error (pg8000 gives a dict)."""
    args = getattr(error, "args", ())
    if args and isinstance(args[0], dict):
        return str(args[0].get("M", args[0]))
    text = str(error).strip()
    for line in text.splitlines():
        line = line.strip()
        if line:
            return line
    return type(error).__name__


class PostgreSQLDatabases(TrialDatabases):
    """Per-trial databases on one PostgreSQL server, reached as *admin_dsn*
    (a role allowed to CREATE DATABASE).

    *prefix* None means a user's server: names get a unique prefix
    (``vfab_<8 hex>_``), see ``description``.
    """

    product = "PostgreSQL"

    def __init__(
        self,
        admin_dsn: str,
        prefix: str | None = None,
        counter: Iterator[int] | None = None,
    ) -> None:
        super().__init__(
            prefix if prefix is not None else self.unique_prefix(), counter
        )
        self.admin_dsn = admin_dsn
        self._parts = parse_dsn(admin_dsn)

    driver_modules = drivers.modules("postgresql")

    @property
    def where(self) -> str:
        host = self._parts.get("host", "local socket")
        return host_port(host, self._parts.get("port", 5432))

    def _admin_connection(self) -> Any:
        return admin_connect(self.admin_dsn)

    def _error_text(self, error: BaseException) -> str:
        return first_line(error)

    exists_sql = "SELECT 1 FROM pg_database WHERE datname = %s"

    def _quote(self, name: str) -> str:
        return '"' + name + '"'

    def _drop_statement(self, name: str) -> str:
        # FORCE (PostgreSQL 13+) ends sessions a failed trial left behind.
        return f"DROP DATABASE IF EXISTS {self._quote(name)} WITH (FORCE)"

    def size(self, name: str) -> int:
        """Bytes database *name* occupies (pg_database_size)."""
        rows = self._execute("SELECT pg_database_size(%s)", (name,))
        return int(rows[0][0])

    def dsn(self, name: str) -> str:
        """The DSN of database *name* (as RelStorage's dsn)."""
        return format_dsn({**self._parts, "dbname": name})


class RelStoragePGFactory(_ServerFactory):
    name = "relstorage-pg"
    description = (
        "RelStorage on PostgreSQL (a server per run, or --pg-dsn), history-free"
    )
    backend = "postgresql"
    option_groups = (DBOptions, PGOptions)
    uri_schemes = (URIScheme("postgres", default_port=5432, read_only=True),)
    product = "PostgreSQL"

    def _user_server(self) -> str | None:
        return self.options.get(PGOptions).pg_dsn

    def _port(self) -> int:
        return self.options.get(PGOptions).pg_port

    def _driver(self) -> str | None:
        return self.options.get(PGOptions).pg_driver

    def _server_missing(self) -> str | None:
        reason = available()
        return f"{reason}; or give --pg-dsn" if reason else None

    def _server(self) -> PostgreSQLServer:
        host, port = self._listen()
        return PostgreSQLServer(host=host, port=port)

    def _user_databases(self, dsn: str) -> PostgreSQLDatabases:
        return PostgreSQLDatabases(dsn)

    def _where(self, databases: Any, database: str) -> dict[str, Any]:
        return {"dsn": databases.dsn(database)}

    def _uri(self, databases: Any, database: str) -> str:
        from storages.relstorage.uri import relstorage_uri

        parts = parse_dsn(databases.dsn(database))
        return relstorage_uri(
            self.backend,
            self.keep_history,
            self._named_driver(),
            host=parts.get("host"),
            port=int(parts["port"]) if parts.get("port") else None,
            user=parts.get("user"),
            password=parts.get("password"),
            database=database,
        )


class RelStoragePGHPFactory(RelStoragePGFactory):
    name = "relstorage-pg-hp"
    description = (
        "RelStorage on PostgreSQL (a server per run, or --pg-dsn), history-preserving"
    )
    keep_history = True


#: This backend's storages, history-free first (backends.py orders them).
FACTORIES = (RelStoragePGFactory, RelStoragePGHPFactory)
