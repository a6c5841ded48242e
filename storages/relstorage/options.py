"""The relstorage-* storages' options (RelStorageOptions: --pg-dsn,
--mysql-dsn, ports and drivers), their parsing, and redact() for what is
shown of a DSN."""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
from typing import Any, ClassVar
from urllib.parse import urlsplit, urlunsplit

from storages.options import OptionGroup, at_least
from storages.relstorage.drivers import driver_type

#: The extra that installs RelStorage and the pure-Python drivers.
EXTRA = "pip install 'vfab-loadtest[relstorage]' (or ./bootstrap)"


_port = at_least(0, 65535)


def redact(dsn: str | None) -> str | None:
    """*dsn* without its password (for JSON metadata and messages)."""
    if dsn is None:
        return None
    if "://" in dsn:
        url = urlsplit(dsn)
        if url.password is None:
            return dsn
        netloc = url.netloc.rpartition("@")
        user = netloc[0].partition(":")[0]
        return urlunsplit(url._replace(netloc=f"{user}:***@{netloc[2]}"))
    return " ".join(
        "password=***" if item.startswith("password=") else item for item in dsn.split()
    )


@dataclasses.dataclass(frozen=True)
class RelStorageOptions(OptionGroup):
    """Options of the relstorage-* storages.

    pg_dsn: a libpq DSN (key=value or postgresql://) of a PostgreSQL server
        to use instead of starting one; a role allowed to CREATE DATABASE.
    mysql_dsn: mysql://USER:PASSWORD@HOST:PORT of a MySQL/MariaDB server to
        use instead of starting one.
    pg_port, mysql_port: port of the server the suite starts (0: free one).
    pg_driver: psycopg2 or pg8000 (None: psycopg2 when installed).
    mysql_driver: MySQLdb (mysqlclient) or PyMySQL (None: mysqlclient when
        installed).
    """

    title: ClassVar[str] = "RelStorage options (relstorage-pg, relstorage-mysql)"

    pg_dsn: str | None = None
    mysql_dsn: str | None = None
    pg_port: int = 0
    mysql_port: int = 0
    pg_driver: str | None = None
    mysql_driver: str | None = None

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
            "--mysql-dsn",
            metavar="mysql://USER:PASSWORD@HOST:PORT",
            help="use this MySQL/MariaDB server instead of starting one; the "
            "suite creates and drops only databases named vfab_<8 hex>_*",
        )
        group.add_argument(
            "--pg-port",
            type=_port,
            default=0,
            metavar="N",
            help="port of the PostgreSQL the suite starts on 127.0.0.1 "
            "(default: a free port)",
        )
        group.add_argument(
            "--mysql-port",
            type=_port,
            default=0,
            metavar="N",
            help="port of the MariaDB the suite starts on 127.0.0.1 "
            "(default: a free port)",
        )
        group.add_argument(
            "--pg-driver",
            type=driver_type("postgresql"),
            metavar="psycopg2|pg8000",
            help="PostgreSQL driver (default: psycopg2 when installed)",
        )
        group.add_argument(
            "--mysql-driver",
            type=driver_type("mysql"),
            metavar="mysqlclient|PyMySQL",
            help="MySQL driver (default: mysqlclient when installed)",
        )

    def to_json(self) -> dict[str, Any]:
        """The options as JSON values, passwords masked."""
        options = dataclasses.asdict(self)
        options["pg_dsn"] = redact(self.pg_dsn)
        options["mysql_dsn"] = redact(self.mysql_dsn)
        return options


def relstorage_missing() -> str | None:
    if importlib.util.find_spec("relstorage") is None:
        return f"RelStorage is not installed: {EXTRA}"
    return None
