"""RelStorage's database drivers, named in one place: per backend, the
names RelStorage accepts (its drivers' __name__, the default first), the
names pip installs them by, and the module each imports.

Never "auto": with gevent installed (locust pulls it in) RelStorage's auto
picks its gevent drivers, which yield to a hub the suite does not run.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

#: Driver names RelStorage accepts per backend; the first is the default.
DRIVERS = {
    "sqlite3": ("sqlite3",),
    "postgresql": ("psycopg2", "pg8000"),
    "mysql": ("MySQLdb", "PyMySQL"),
}
#: The names people use for the same drivers (pip's).
DRIVER_ALIASES = {"mysqlclient": "MySQLdb", "pymysql": "PyMySQL"}
#: The module each driver name imports.
DRIVER_MODULES = {
    "sqlite3": "sqlite3",
    "psycopg2": "psycopg2",
    "pg8000": "pg8000",
    "MySQLdb": "MySQLdb",
    "PyMySQL": "pymysql",
}


def pip_name(driver: str) -> str:
    """The name pip installs *driver* by (mysqlclient for MySQLdb)."""
    return {v: k for k, v in DRIVER_ALIASES.items()}.get(driver, driver)


def modules(backend: str) -> tuple[str, ...]:
    """The modules of *backend*'s drivers (where their exceptions live)."""
    return tuple(DRIVER_MODULES[name] for name in DRIVERS[backend])


def all_modules() -> tuple[str, ...]:
    return tuple(DRIVER_MODULES.values())


def driver_type(backend: str) -> Callable[[str], str]:
    """An argparse type: a driver of *backend* by any of its names, in any
    case, as RelStorage names it."""
    names = {name.lower(): name for name in DRIVERS[backend]}
    names.update(
        (alias.lower(), name)
        for alias, name in DRIVER_ALIASES.items()
        if name in DRIVERS[backend]
    )
    choices = " or ".join(pip_name(name) for name in DRIVERS[backend])

    def parse(text: str) -> str:
        if text.lower() not in names:
            raise argparse.ArgumentTypeError(f"choose {choices}, not {text!r}")
        return names[text.lower()]

    return parse
