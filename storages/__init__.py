"""Swappable storages behind one registry.

Each module here holds one StorageFactory (see storages.base for what a
storage module declares); storages.registry maps the names typed on the
command line to them (storages.configured adds the columns of databases a
user names), in the order of the report's columns, and adds those
of other packages (entry point group ``vfab_loadtest.storages``).  vfab
knows nothing of storages and storages know nothing of vfab: scenarios
joins them.

The names below are loaded on first use, so that importing one storage
(``storages.bdb.storage``: a plain ZODB storage) does not load the suite's
registry and every other backend with it.
"""

from __future__ import annotations

import importlib
from typing import Any

#: Public name -> the module that defines it.
_EXPORTS = {
    "ROOT_KEY": "storages.base",
    "CrashCutStorage": "storages.base",
    "DamagedStorage": "storages.base",
    "DBOptions": "storages.base",
    "NeedsRecovery": "storages.base",
    "OptionGroup": "storages.base",
    "StorageError": "storages.base",
    "StorageFactory": "storages.base",
    "StorageOptions": "storages.base",
    "Shared": "storages.base",
    "Store": "storages.base",
    "ZODBStore": "storages.zodbstore",
    "DEFAULT_STORAGES": "storages.registry",
    "ENTRY_POINT_GROUP": "storages.registry",
    "REGISTRY": "storages.registry",
    "add_storage_options": "storages.registry",
    "configured_columns": "storages.configured",
    "factory_class": "storages.configured",
    "known": "storages.configured",
    "get": "storages.configured",
    "not_storage": "storages.registry",
    "option_groups": "storages.registry",
    "options_from_args": "storages.registry",
    "options_json": "storages.registry",
    "unknown_storage": "storages.registry",
    "user_errors": "storages.registry",
}


def __getattr__(name: str) -> Any:
    try:
        module = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


__all__ = sorted(_EXPORTS)
