"""memory: no database at all, the floor every other storage is measured on.

The objects are the same persistent classes, living in a plain dict; commit
and abort do nothing.  What remains is the cost of the Python work itself.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

from storages.base import StorageFactory, Store


class MemoryStore(Store):
    """A dict for a root.  Limits: nothing is ever written or counted;
    reopen keeps the objects (there is no cache to empty), abort keeps
    changes (there is no transaction to roll back)."""

    name = "memory"

    def __init__(self) -> None:
        self._root: dict[str, Any] = {}

    def root(self) -> MutableMapping[str, Any]:
        return self._root

    def reset(self) -> None:
        self._root = {}

    def commit(self) -> None:
        pass

    def abort(self) -> None:
        pass

    def close(self) -> None:
        self._root = {}


class MemoryFactory(StorageFactory):
    name = "memory"
    description = "plain Python objects, no ZODB; commit does nothing (the floor)"
    option_groups = ()
    has_database = False

    def open(self, directory: Path) -> Store:
        return MemoryStore()
