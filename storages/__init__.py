"""Swappable storages behind one registry.

Each module here holds one StorageFactory (see storages.base for what a
storage module declares); storages.registry maps the names typed on the
command line to them (storages.configured adds the columns of databases a
user names), in the order of the report's columns, and adds those
of other packages (entry point group ``vfab_loadtest.storages``).  vfab
knows nothing of storages and storages know nothing of vfab: scenarios
joins them.

The names below are what callers outside this package use.  Importing any
module of the package loads them, the registry included: no backend
(ZEO, RelStorage, berkeleydb) is imported until a factory opens a store.
The package's own modules import each other by module (``import
storages.ports as ports``, ``from storages.base import ...``), never
through this namespace: it imports the registry, which imports every
factory (tests/test_imports.py holds it).
"""

from __future__ import annotations

# storages.base first: an entry point's module, loaded with the registry
# below, may import the contract from the package while it initialises.
from storages.base import (
    ROOT_KEY,
    CrashCutStorage,
    DamagedStorage,
    DBOptions,
    NeedsRecovery,
    OptionGroup,
    Shared,
    StorageError,
    StorageFactory,
    StorageOptions,
    Store,
)
from storages.configured import configured_columns, factory_class, get, known
from storages.registry import (
    DEFAULT_STORAGES,
    ENTRY_POINT_GROUP,
    REGISTRY,
    add_storage_options,
    not_storage,
    option_groups,
    options_from_args,
    options_json,
    unknown_storage,
    user_errors,
)
from storages.zodbstore import ZODBStore

__all__ = [
    "DEFAULT_STORAGES",
    "ENTRY_POINT_GROUP",
    "REGISTRY",
    "ROOT_KEY",
    "CrashCutStorage",
    "DBOptions",
    "DamagedStorage",
    "NeedsRecovery",
    "OptionGroup",
    "Shared",
    "StorageError",
    "StorageFactory",
    "StorageOptions",
    "Store",
    "ZODBStore",
    "add_storage_options",
    "configured_columns",
    "factory_class",
    "get",
    "known",
    "not_storage",
    "option_groups",
    "options_from_args",
    "options_json",
    "unknown_storage",
    "user_errors",
]
