"""bdb and zeo+bdb: ZODB on Berkeley DB, locally or behind a real runzeo.

``storages.bdb.storage.BDBStorage(path, **options)`` is the storage itself
(storage.py, its record layout in format.py, packing in pack.py, options in
options.py); it needs ZODB and berkeleydb, not the rest of this suite.  This
package is also a ZConfig component (component.xml, ``%import
storages.bdb`` then a ``<bdbstorage>`` section) and provides the zodburi
scheme ``bdb://`` (config.py).  The suite's factories are in factory.py.

The names below need no berkeleydb: BDBStorage is imported from
storages.bdb.storage, which does (as the factories do, in open()).
"""

from __future__ import annotations

from storages.bdb.check import check_environment
from storages.bdb.factory import (
    ENV_DIR,
    BDBFactory,
    BDBFactoryOptions,
    ZEOBDBFactory,
    bdbstorage_section,
    berkeleydb_missing,
)
from storages.bdb.options import DURABILITY, BDBError, BDBOptionError, BDBOptions

__all__ = [
    "DURABILITY",
    "ENV_DIR",
    "BDBError",
    "BDBFactory",
    "BDBFactoryOptions",
    "BDBOptionError",
    "BDBOptions",
    "ZEOBDBFactory",
    "bdbstorage_section",
    "berkeleydb_missing",
    "check_environment",
]
