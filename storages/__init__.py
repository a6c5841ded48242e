"""Swappable storages behind one registry.

Each module here holds one StorageFactory; REGISTRY maps the names typed on
the command line to them, in the order of the report's columns.  vfab knows
nothing of storages and storages know nothing of vfab: scenarios joins them.
"""

from __future__ import annotations

from storages.base import (
    ROOT_KEY,
    StorageError,
    StorageFactory,
    StorageOptions,
    Store,
    ZODBStore,
)
from storages.bdb import BDBFactory, ZEOBDBFactory
from storages.file import FileFactory
from storages.mapping import MappingFactory
from storages.memory import MemoryFactory
from storages.zeo import ZEOFactory

#: name -> factory class, in report column order.
REGISTRY: dict[str, type[StorageFactory]] = {
    factory.name: factory
    for factory in (
        MemoryFactory,
        MappingFactory,
        FileFactory,
        BDBFactory,
        ZEOFactory,
        ZEOBDBFactory,
    )
}

#: What `vfab-bench run` measures when --storage is not given.
DEFAULT_STORAGES: tuple[str, ...] = ("memory", "mapping", "file", "bdb", "zeo")


def get(name: str, options: StorageOptions | None = None) -> StorageFactory:
    """The factory registered as *name*, made with *options*.

    Raises StorageError naming the valid choices for an unknown name.
    """
    try:
        factory = REGISTRY[name]
    except KeyError:
        raise StorageError(
            f"unknown storage {name!r}; choose from {', '.join(REGISTRY)}"
        ) from None
    return factory(options)


__all__ = [
    "DEFAULT_STORAGES",
    "REGISTRY",
    "ROOT_KEY",
    "StorageError",
    "StorageFactory",
    "StorageOptions",
    "Store",
    "ZODBStore",
    "get",
]
