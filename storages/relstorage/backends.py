"""The relstorage-* factories in the registry's order: every backend's
history-free storage, then every history-preserving one.  Each backend
module (sqlite.py, postgresql.py, mysql.py) names its two in FACTORIES,
history-free first; a new backend is one module and one line here."""

from __future__ import annotations

from storages.base import StorageFactory
from storages.relstorage import mysql, postgresql, sqlite

BACKENDS = (sqlite, postgresql, mysql)

FACTORIES: tuple[type[StorageFactory], ...] = tuple(
    backend.FACTORIES[i] for i in (0, 1) for backend in BACKENDS
)
