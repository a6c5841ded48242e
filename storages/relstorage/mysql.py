"""MariaDB (MySQL) for RelStorage: relstorage-mysql and relstorage-mysql-hp
(FACTORIES), on a server the suite starts, or the user's (--mysql-dsn).

MariaDBServer runs Debian's MariaDB 10.11: mariadb-install-db --no-defaults
into a temporary directory, then ``mariadbd --no-defaults`` (first
argument, so /etc/mysql is never read) as a child of the suite on
127.0.0.1, ready at the first ``mariadb-admin ping``, stopped with SIGTERM
(what ``mariadb-admin shutdown`` does, without its 1 s poll).  Its root
account has no password; it is reachable only from 127.0.0.1 and through
the socket in the server's private directory.  Lock waits are short (10 s,
not MariaDB's 86,400 s): a trial that fails with a transaction open must
not hang the next DROP.

MySQLDatabases makes and drops the per-trial databases, on that server or
on one the user names with a mysql://USER:PASSWORD@HOST:PORT URL.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import pwd
import shutil
import signal
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import unquote, urlsplit

from storages.base import DBOptions, OptionGroup, StorageError, URIScheme
from storages.ports import LOCALHOST, host_port, is_loopback
from storages.relstorage import drivers
from storages.relstorage.drivers import driver_type
from storages.relstorage.factory import _ServerFactory
from storages.relstorage.options import port_type, redact
from storages.relstorage.servers import ServerProcess, TrialDatabases, run_tool

#: Seconds a statement waits for a lock (metadata and InnoDB rows).
LOCK_WAIT_TIMEOUT = 10


@dataclasses.dataclass(frozen=True)
class MySQLOptions(OptionGroup):
    """Options of relstorage-mysql and relstorage-mysql-hp.

    mysql_dsn: mysql://USER:PASSWORD@HOST:PORT of a MySQL/MariaDB server to
        use instead of starting one.
    mysql_port: port of the server the suite starts (0: a free one).
    mysql_driver: MySQLdb (mysqlclient) or PyMySQL (None: mysqlclient when
        installed).
    """

    title: ClassVar[str] = "RelStorage on MariaDB (relstorage-mysql, -mysql-hp)"
    #: The password masked.
    JSON_AS: ClassVar[dict[str, Any]] = {"mysql_dsn": redact}

    mysql_dsn: str | None = None
    mysql_port: int = 0
    mysql_driver: str | None = None

    @classmethod
    def add_arguments(cls, group: argparse._ArgumentGroup) -> None:
        group.add_argument(
            "--mysql-dsn",
            metavar="mysql://USER:PASSWORD@HOST:PORT",
            help="use this MySQL/MariaDB server instead of starting one; the "
            "suite creates and drops only databases named vfab_<8 hex>_*",
        )
        group.add_argument(
            "--mysql-port",
            type=port_type,
            default=0,
            metavar="N",
            help="port of the MariaDB the suite starts on 127.0.0.1 "
            "(default: a free port)",
        )
        group.add_argument(
            "--mysql-driver",
            type=driver_type("mysql"),
            metavar="mysqlclient|PyMySQL",
            help="MySQL driver (default: mysqlclient when installed)",
        )


def find_tool(name: str) -> str:
    """Path of a MariaDB program (mariadbd lives in /usr/sbin)."""
    found = shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/bin")
    if not found:
        raise StorageError(
            f"MariaDB server binaries not found ({name}): install Debian's "
            "mariadb-server or run ./bootstrap --servers"
        )
    return found


def available() -> str | None:
    """None when a MariaDB server can be started here, else why not."""
    try:
        for tool in ("mariadbd", "mariadb-install-db", "mariadb-admin"):
            find_tool(tool)
    except StorageError as e:
        return str(e)
    return None


class MariaDBServer(ServerProcess):
    """A throwaway MariaDB on 127.0.0.1; user root, no password.

    *settings* become ``--name=value`` options after the suite's own.
    """

    product = "MariaDB"
    death_signal = signal.SIGTERM  # MariaDB's normal shutdown

    def __init__(
        self,
        directory: Path | str | None = None,
        host: str = LOCALHOST,
        port: int = 0,
        settings: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(directory, host, port)
        self.settings = dict(settings or {})
        self.os_user = pwd.getpwuid(os.geteuid()).pw_name

    @property
    def data_dir(self) -> Path:
        assert self.directory is not None
        return self.directory / "data"

    socket_name = len("/mariadb.sock")

    @property
    def socket_path(self) -> Path:
        assert self.socket_home is not None
        return self.socket_home / "mariadb.sock"

    def _admin(self, *args: str) -> list[str]:
        return [
            find_tool("mariadb-admin"),
            "--no-defaults",
            f"--socket={self.socket_path}",
            "--user=root",
            "--connect-timeout=5",
            *args,
        ]

    def _initialize(self) -> None:
        if (self.data_dir / "mysql").is_dir():
            return  # a directory the caller gave us, initialised before
        run_tool(
            [
                find_tool("mariadb-install-db"),
                "--no-defaults",
                f"--datadir={self.data_dir}",
                f"--user={self.os_user}",
                # root without a password (not unix_socket), so that the
                # suite reaches it over TCP like any client, as root or not.
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
                # Passed to its bootstrap mariadbd: its temporary tables in
                # this server's directory, not the shared /tmp (two servers
                # installing at once: "cannot remove ... #sql-temptable").
                f"--tmpdir={self.directory}",
            ],
            f"mariadb-install-db in {self.data_dir}",
        )

    def _command(self) -> list[str]:
        argv = [
            find_tool("mariadbd"),
            "--no-defaults",  # must come first
            f"--datadir={self.data_dir}",
            f"--socket={self.socket_path}",
            f"--port={self.port}",
            f"--bind-address={self.host}",
            f"--user={self.os_user}",
            "--skip-name-resolve",
            f"--pid-file={self.directory}/mariadb.pid",
            # Its temporary tables in its own directory, not the shared /tmp
            # where another process removed one under a run (a CI-like run
            # beside other users' servers: "Error on delete of
            # '/tmp/#sql-temptable-...MAI' (Errcode: 2)").
            f"--tmpdir={self.directory}",
            f"--lock-wait-timeout={LOCK_WAIT_TIMEOUT}",
            f"--innodb-lock-wait-timeout={LOCK_WAIT_TIMEOUT}",
        ]
        if not is_loopback(self.host):
            argv.append(f"--init-file={self._remote_root()}")
        argv += [f"--{name}={value}" for name, value in self.settings.items()]
        return argv

    def _remote_root(self) -> Path:
        """SQL run at each start on an address other than loopback: root
        from any host, no password, as from 127.0.0.1 (without it every
        client, this machine's too, got "Host ... is not allowed to
        connect").  `serve --host` warns that it is exposed."""
        assert self.directory is not None
        path = self.directory / "remote-root.sql"
        path.write_text(
            "CREATE USER IF NOT EXISTS 'root'@'%' IDENTIFIED BY '';\n"
            "GRANT ALL PRIVILEGES ON *.* TO 'root'@'%' WITH GRANT OPTION;\n"
        )
        return path

    def _ready(self) -> bool:
        try:
            run_tool(self._admin("ping"), "mariadb-admin ping", timeout=10)
        except StorageError:
            return False
        return True

    def _shutdown(self, process: subprocess.Popen[bytes]) -> None:
        # SIGTERM is the same normal shutdown as `mariadb-admin shutdown`,
        # which then polls the pid file once a second: 1.0 s per stop, not
        # ~0.1 s.
        process.send_signal(signal.SIGTERM)

    def params(self, db: str | None = None) -> dict[str, Any]:
        """Connection keywords for MySQLAdapter (and MySQLdb/PyMySQL)."""
        params: dict[str, Any] = {
            "host": self.host,
            "port": self.port,
            "user": "root",
            # "passwd", not "password": RelStorage masks only "passwd" in
            # what it logs and prints (mysqlclient warns that it is old).
            "passwd": "",
        }
        if db is not None:
            params["database"] = db
        return params

    def databases(self, prefix: str = "vfab_trial_") -> MySQLDatabases:
        return MySQLDatabases(
            self.params(), prefix=prefix, counter=self.database_counter
        )


def parse_url(url: str) -> dict[str, Any]:
    """mysql://USER[:PASSWORD]@HOST[:PORT] -> MySQLAdapter keywords."""
    parts = urlsplit(url)
    if parts.scheme not in ("mysql", "mariadb") or not parts.hostname:
        raise StorageError(
            f"bad MySQL address {url!r}: expected mysql://USER:PASSWORD@HOST:PORT"
        )
    try:
        port = parts.port or 3306
    except ValueError:
        raise StorageError(f"bad port in MySQL address {url!r}") from None
    return {
        "host": parts.hostname,
        "port": port,
        "user": unquote(parts.username or "root"),
        "passwd": unquote(parts.password or ""),
    }


def connect_params(params: Mapping[str, Any]) -> Any:
    """An autocommit connection (MySQLdb, else PyMySQL); StorageError with
    the server's one-line reason when it cannot connect."""
    kwargs = dict(params)
    kwargs.setdefault("connect_timeout", 10)
    where = host_port(str(kwargs.get("host", "localhost")), kwargs.get("port", 3306))
    try:
        import MySQLdb as driver
    except ImportError:
        try:
            import pymysql as driver  # type: ignore[no-redef]
        except ImportError:
            raise StorageError(
                "no MySQL driver installed (mysqlclient or PyMySQL): "
                "pip install 'vfab-loadtest[relstorage]'"
            ) from None
    try:
        conn = driver.connect(**kwargs)
    except driver.Error as e:
        raise StorageError(
            f"cannot connect to MySQL at {where}: {error_text(e)}"
        ) from None
    conn.autocommit(True)
    return conn


def error_text(error: BaseException) -> str:
    args: tuple[Any, ...] = getattr(error, "args", ())
    if len(args) >= 2:
        return f"({args[0]}) {args[1]}"
    return (
        str(error).strip().splitlines()[0]
        if str(error).strip()
        else type(error).__name__
    )


class MySQLDatabases(TrialDatabases):
    """Per-trial databases on one MySQL/MariaDB server reached with
    *params* (host, port, user, passwd) as a user allowed to CREATE DATABASE.

    *prefix* None means a user's server: names get a unique prefix
    (``vfab_<8 hex>_``), see ``description``.
    """

    product = "MySQL"

    def __init__(
        self,
        params: Mapping[str, Any],
        prefix: str | None = None,
        counter: Iterator[int] | None = None,
    ) -> None:
        super().__init__(
            prefix if prefix is not None else self.unique_prefix(), counter
        )
        self.params = dict(params)
        self.params.pop("db", None)
        self.params.pop("database", None)

    @classmethod
    def for_url(cls, url: str) -> MySQLDatabases:
        return cls(parse_url(url))

    driver_modules = drivers.modules("mysql")

    @property
    def where(self) -> str:
        return host_port(str(self.params.get("host")), self.params.get("port", 3306))

    def _admin_connection(self) -> Any:
        return connect_params(self.params)

    def _error_text(self, error: BaseException) -> str:
        return error_text(error)

    exists_sql = "SELECT 1 FROM information_schema.schemata WHERE schema_name = %s"

    def _quote(self, name: str) -> str:
        return f"`{name}`"

    def size(self, name: str) -> int:
        """Bytes database *name* occupies: data_length + index_length of its
        tables, after ANALYZE TABLE (InnoDB's figures are otherwise those of
        its last automatic statistics, which lag a large commit)."""
        tables = self._execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
            (name,),
        )
        if tables:
            quoted = ", ".join(f"{self._quote(name)}.`{t[0]}`" for t in tables)
            self._execute(f"ANALYZE TABLE {quoted}")
        rows = self._execute(
            "SELECT COALESCE(SUM(data_length + index_length), 0) "
            "FROM information_schema.tables WHERE table_schema = %s",
            (name,),
        )
        return int(rows[0][0])

    def adapter_params(self, name: str) -> dict[str, Any]:
        """MySQLAdapter keywords for database *name*."""
        return {**self.params, "database": name}


class RelStorageMySQLFactory(_ServerFactory):
    name = "relstorage-mysql"
    description = (
        "RelStorage on MariaDB (a server per run, or --mysql-dsn), history-free"
    )
    backend = "mysql"
    option_groups = (DBOptions, MySQLOptions)
    uri_schemes = (URIScheme("mysql", default_port=3306, read_only=True),)
    product = "MySQL"

    def _user_server(self) -> str | None:
        return self.options.get(MySQLOptions).mysql_dsn

    def _port(self) -> int:
        return self.options.get(MySQLOptions).mysql_port

    def _driver(self) -> str | None:
        return self.options.get(MySQLOptions).mysql_driver

    def _server_missing(self) -> str | None:
        reason = available()
        return f"{reason}; or give --mysql-dsn" if reason else None

    def _server(self) -> MariaDBServer:
        host, port = self._listen()
        return MariaDBServer(host=host, port=port)

    def _user_databases(self, dsn: str) -> MySQLDatabases:
        return MySQLDatabases.for_url(dsn)

    def _where(self, databases: Any, database: str) -> dict[str, Any]:
        return {"params": databases.adapter_params(database)}

    def _uri(self, databases: Any, database: str) -> str:
        from storages.relstorage.uri import relstorage_uri

        params = databases.adapter_params(database)
        return relstorage_uri(
            self.backend,
            self.keep_history,
            self._named_driver(),
            host=params.get("host"),
            port=params.get("port"),
            user=params.get("user"),
            password=params.get("passwd") or params.get("password"),
            database=database,
        )


class RelStorageMySQLHPFactory(RelStorageMySQLFactory):
    name = "relstorage-mysql-hp"
    description = (
        "RelStorage on MariaDB (a server per run, or --mysql-dsn), history-preserving"
    )
    keep_history = True


#: This backend's storages, history-free first (backends.py orders them).
FACTORIES = (RelStorageMySQLFactory, RelStorageMySQLHPFactory)
