"""mapping: ZODB's MappingStorage, everything in process memory.

Pickling, the connection cache and two-phase commit are all there; no disk
and no network.  It does no conflict resolution (FileStorage does).
"""

from __future__ import annotations

from pathlib import Path

from storages.base import (
    StorageFactory,
    Store,
    URIScheme,
)
from storages.zodbstore import Wrap, ZODBStore, wrapping


class MappingFactory(StorageFactory):
    name = "mapping"
    description = "ZODB MappingStorage: pickles in memory, no disk"
    # zodburi's memory:// is a MappingStorage.
    uri_schemes = (URIScheme("memory"),)

    def open(self, directory: Path, wrap: Wrap | None = None) -> Store:
        from ZODB.MappingStorage import MappingStorage

        storage = MappingStorage()

        def same_storage() -> MappingStorage:
            # ZODB.DB.close() closes its storage; a MappingStorage's data
            # outlive close(), so reopen (cold cache) marks it open again
            # rather than losing the data with a new instance.
            storage._opened = True
            return storage

        return ZODBStore(self.name, wrapping(same_storage, wrap), self.options)
