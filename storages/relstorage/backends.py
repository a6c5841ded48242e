"""The relstorage-* factories, in the registry's order: one per backend
(sqlite.py; PostgreSQL and MariaDB in factory.py) and history mode."""

from __future__ import annotations

from storages.base import StorageFactory
from storages.relstorage.factory import (
    RelStorageMySQLFactory,
    RelStorageMySQLHPFactory,
    RelStoragePGFactory,
    RelStoragePGHPFactory,
)
from storages.relstorage.sqlite import (
    RelStorageSQLiteFactory,
    RelStorageSQLiteHPFactory,
)

FACTORIES: tuple[type[StorageFactory], ...] = (
    RelStorageSQLiteFactory,
    RelStoragePGFactory,
    RelStorageMySQLFactory,
    RelStorageSQLiteHPFactory,
    RelStoragePGHPFactory,
    RelStorageMySQLHPFactory,
)
