"""bdb and zeo+bdb: ZODB on Berkeley DB, locally or behind a real runzeo.

``storages.bdb.BDBStorage(path, **options)`` is the storage itself
(storage.py, its record layout in format.py, packing in pack.py, options in
options.py); it needs ZODB and berkeleydb, not the rest of this suite.  This
package is also a ZConfig component (component.xml, ``%import
storages.bdb`` then a ``<bdbstorage>`` section) and provides the zodburi
scheme ``bdb://`` (config.py).  The suite's factories are in factory.py.

Every name below is loaded on first use: importing the package needs no
berkeleydb (the factories import it in open()), and importing
storages.bdb.storage does not load the suite.
"""

from __future__ import annotations

import importlib
from typing import Any

#: Public name -> the module of this package that defines it.
_EXPORTS = {
    "BDBStorage": "storage",
    "BDBError": "options",
    "BDBOptionError": "options",
    "BDBOptions": "options",
    "DURABILITY": "options",
    "BDBFactory": "factory",
    "BDBFactoryOptions": "factory",
    "ZEOBDBFactory": "factory",
    "berkeleydb_missing": "factory",
    "bdbstorage_section": "factory",
    "ENV_DIR": "factory",
    "check_environment": "check",
}


def __getattr__(name: str) -> Any:
    try:
        module = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


__all__ = sorted(_EXPORTS)
