"""zlib+NAME: zc.zlibstorage compressing the records of another storage.

A composite (storages.composite): ZlibFactory holds the factory of the
storage it compresses (its ``base``, a factory whose ``wraps_storage`` says
its open() takes a wrapper for the ZODB storage), forwards the hooks asked
before opening to it (check_existing above all: the base's damage check),
has its options, errors and files (derived, never copied) and asks it to open its
store with ZlibStorage around the storage; it never subclasses that
factory.  ``zlib+file`` is registered;
the registry makes ``zlib+NAME`` for any other NAME that wraps (mapping,
bdb) when asked (zlib_of).  The size on disk is the base's: the compressed
bytes.  DESIGN.md measured 10,000 objects: commit 0.36 s vs 0.19 s, 23%
fewer bytes.  A Data.fs written through zlib+file holds compressed records:
it cannot be read without the wrapper.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any, ClassVar

from storages.base import StorageError, StorageFactory, Store
from storages.composite import CompositeFactory
from storages.file import FileFactory
from storages.zodbstore import open_wrapped

PREFIX = "zlib+"


def zlibstorage_missing() -> str | None:
    """Why zc.zlibstorage cannot be imported here, or None."""
    try:
        import zc.zlibstorage  # noqa: F401
    except ImportError as e:
        return f"zc.zlibstorage is not importable ({e}); pip install zc.zlibstorage"
    return None


def wrap_zlib(storage: Any) -> Any:
    """*storage* behind a ZlibStorage (compressing new records, reading
    compressed and plain ones)."""
    from zc.zlibstorage import ZlibStorage

    return ZlibStorage(storage)


class ZlibFactory(CompositeFactory):
    """zc.zlibstorage in front of *base*'s storage.  Capabilities, options
    and checks are the base's, except that it cannot be served (runzeo would
    need the zlibstorage component: use --storage-config for that)."""

    #: The factory whose storage this one compresses.
    base: ClassVar[type[StorageFactory]] = FileFactory
    name: ClassVar[str] = PREFIX + FileFactory.name
    description: ClassVar[str] = "zc.zlibstorage over ZODB FileStorage (compressed)"

    def unavailable(self) -> str | None:
        return zlibstorage_missing() or self.base_factory.unavailable()

    @classmethod
    def path_uri(cls, path: Path) -> str | None:
        """The base's URI with zlib+ in front (storages.named opens it
        through zc.zlibstorage, read-only where the base's scheme is)."""
        uri = cls.base.path_uri(path)
        return None if uri is None else PREFIX + uri

    def open(self, directory: Path) -> Store:
        reason = self.unavailable()
        if reason:
            raise StorageError(reason)
        store = open_wrapped(self.base_factory, directory, wrap_zlib)
        store.name = self.name
        return store


@cache
def zlib_of(base: type[StorageFactory]) -> type[ZlibFactory]:
    """The zlib+NAME factory class over *base* (one class per base)."""
    if not base.wraps_storage:
        raise StorageError(f"storage {base.name!r} has no ZODB storage zlib+ can wrap")
    attrs: dict[str, Any] = {
        "base": base,
        "name": PREFIX + base.name,
        "description": f"zc.zlibstorage over {base.name}: {base.description}",
    }
    return type(f"Zlib[{base.name}]", (ZlibFactory,), attrs)


#: zlib+file, registered among the built-ins.
ZlibFileFactory = zlib_of(FileFactory)
