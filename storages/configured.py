"""Storages a ZConfig file or a zodburi URI names: the user's databases.

``--storage-config FILE`` (a ZODB configuration file: ``%import`` lines,
then ``<zodb NAME>`` sections each holding one storage section) gives one
column per ``<zodb NAME>``, named NAME.  ``--storage-uri [NAME=]URI`` gives
one column named NAME, or the URI itself.  URIs are zodburi's (file://,
memory://, zeo://, demo:, zconfig://, RelStorage's postgres://, mysql://,
sqlite://, this project's bdb://...); ``zlib+`` in front of any of them puts
zc.zlibstorage over the storage it names (zodburi has no zlib scheme).

What a URI or a section names, and how it opens, is storages.named's; here
are the factories, made at run time, one class per column (columns()), and
the lookup of a storage name (factory_class(), get(): a registered storage,
zlib+NAME, or a column the StorageOptions' ConfiguredOptions name).  Such
a database is the user's: each trial writes under its own key below
root[ROOT_KEY] and removes it when it ends (ZODBStore's trial_key), and the
pack row runs only with --pack.  The
database is opened read-only first (preflight(), once per column) where the
storage can be: a FileStorage is never opened read-write before a read-only
open succeeded.
"""

from __future__ import annotations

import logging
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar

import storages.registry as registry
from storages.base import (
    DBOptions,
    StorageError,
    StorageFactory,
    StorageOptions,
    Store,
    new_trial_key,
)
from storages.errors import NoDatabase

# Re-exported: their home was this module.
from storages.named import Source as Source
from storages.named import URISource as URISource
from storages.named import ZConfigSource as ZConfigSource
from storages.named import open_one_line
from storages.named import parse_zconfig as parse_zconfig
from storages.named import split_uri as split_uri
from storages.named import uri_schemes as uri_schemes
from storages.named import zconfig_source as zconfig_source
from storages.options import ConfiguredOptions as ConfiguredOptions
from storages.zlib import PREFIX as ZLIB_PREFIX
from storages.zlib import zlib_of
from storages.zodbstore import ZODBStore


def _innermost(storage: Any) -> Any:
    while getattr(storage, "base", None) is not None and hasattr(storage, "_transform"):
        storage = storage.base
    return storage


def _demo(storage: Any) -> bool:
    from ZODB.DemoStorage import DemoStorage

    return isinstance(_innermost(storage), DemoStorage)


def _in_memory(storage: Any) -> bool:
    """True for a storage whose data die with the instance (MappingStorage,
    or one wrapped by zc.zlibstorage): reopen must keep the instance."""
    from ZODB.MappingStorage import MappingStorage

    return isinstance(_innermost(storage), MappingStorage)


class ConfiguredStore(ZODBStore):
    """A ZODBStore on a user's database; its counters say which connection
    cache target it opened with (the section's, the URI's or --cache-size)."""

    def jar_stats(self) -> dict[str, Any]:
        return {"cache_target": self._opened_cache_size}


class ConfiguredFactory(StorageFactory):
    """Opens the database one source names (a URI, or a <zodb> section).

    Made per column at run time (columns()); subclasses set ``name``,
    ``description`` and ``source``.  Limits: the data are the user's, so the
    directory the runner gives is unused (nothing is created there, and the
    size on disk is what the storage reports: getSize()); <zodb> options
    other than cache-size (pool size, database name...) are not used;
    a ZEO client's size goes stale between its own commits.
    """

    name: ClassVar[str] = "configured"
    description: ClassVar[str] = "a database a ZConfig file or URI names"
    source: ClassVar[Source]
    #: The read-only check passed for this column (once per run).
    _checked: ClassVar[bool] = False

    def unavailable(self) -> str | None:
        if isinstance(self.source, URISource) and self.source.zlib:
            from storages.zlib import zlibstorage_missing

            return zlibstorage_missing()
        return None

    def preflight(self) -> None:
        """Open the database read-only and close it (where the storage has a
        read-only mode and the data exist); StorageError if that fails.
        Servers are reached first, so that a dead one fails at once."""
        cls = type(self)
        if cls._checked:
            return
        self.source.check_files()
        self.source.reach()
        opener = self.source.read_only_opener()
        if opener is not None:
            # The failure is our one line: keep the backend's log (RelStorage
            # logs a refused connection over several lines) out of stderr.
            logging.disable(logging.ERROR)
            try:
                storage = open_one_line(opener, self.source)
            except NoDatabase:
                storage = None  # a new database: nothing to check yet
            finally:
                logging.disable(logging.NOTSET)
            if storage is not None:
                storage.close()
        cls._checked = True

    def open(self, directory: Path) -> Store:
        self.preflight()
        open_storage, section_cache = self.source.opener()
        zlib = isinstance(self.source, URISource) and self.source.zlib
        options = self.options
        if options.get(DBOptions).cache_size is None and section_cache is not None:
            # --cache-size wins; else what the section or URI says.
            options = options.replace(DBOptions(cache_size=int(section_cache)))
        kept: list[Any] = []

        def storage() -> Any:
            if kept:  # in memory: the same instance, or the data are gone
                kept[0]._opened = True
                return kept[1]
            opened = open_one_line(open_storage, self.source)
            if _demo(opened):
                opened.close()
                raise StorageError(
                    f"{self.source.describe()}: a DemoStorage keeps its changes "
                    "in memory and loses them when the cold rows reopen it"
                )
            if zlib:
                from storages.zlib import wrap_zlib

                opened = wrap_zlib(opened)
            if _in_memory(opened):
                kept[:] = [_innermost(opened), opened]
            return opened

        return ConfiguredStore(
            self.name,
            storage,
            options,
            trial_key=new_trial_key(),
            packs=options.get(ConfiguredOptions).pack,
        )


def _column(name: str, source: Source, description: str) -> type[ConfiguredFactory]:
    return type(
        f"Configured[{name}]",
        (ConfiguredFactory,),
        {"name": name, "description": description, "source": source},
    )


@lru_cache(maxsize=32)
def _columns(configured: ConfiguredOptions) -> dict[str, type[ConfiguredFactory]]:
    found: dict[str, type[ConfiguredFactory]] = {}

    def add(name: str, factory: type[ConfiguredFactory]) -> None:
        if name in found:
            raise StorageError(f"storage column {name!r} is named twice")
        found[name] = factory

    if configured.storage_config is not None:
        path = configured.storage_config.absolute()
        sections = parse_zconfig(path)
        for index, section in enumerate(sections):
            name = section.name
            if not name:
                if len(sections) > 1:
                    raise StorageError(
                        f"{path}: every <zodb> section needs a name when there "
                        "are several (<zodb NAME>): it names the column"
                    )
                name = path.stem
            source = ZConfigSource(path, index)
            add(name, _column(name, source, f"<zodb {name}> in {path}"))
    for text in configured.storage_uri:
        name, uri = split_uri(text)
        uri_source = URISource(uri)
        uri_source.validate()
        add(name, _column(name, uri_source, uri))
    return found


def columns(options: StorageOptions | None) -> dict[str, type[ConfiguredFactory]]:
    """Column name -> factory class for the databases *options* name (empty
    without a ConfiguredOptions).  StorageError for bad input: a ZConfig file
    missing, unparsable, with an unknown section type or no <zodb> section;
    a URI no resolver takes; a column named twice."""
    if options is None:
        return {}
    configured = options.get(ConfiguredOptions)
    if configured.storage_config is None and not configured.storage_uri:
        return {}
    return _columns(configured)


# -- names -> factories: the registry and the columns ------------------------


def configured_columns(
    options: StorageOptions | None,
) -> dict[str, type[StorageFactory]]:
    """The columns --storage-config and --storage-uri name in *options*
    (storages.configured), in order; StorageError for bad input or a column
    named like a registered storage."""
    found = columns(options)
    for name in found:
        registered = registry.REGISTRY
        if name in registered or name.removeprefix(ZLIB_PREFIX) in registered:
            raise StorageError(
                f"storage column {name!r} has a registered storage's name; "
                "name it otherwise (<zodb OTHER>, or --storage-uri OTHER=URI)"
            )
    return dict(found)


def factory_class(
    name: str, options: StorageOptions | None = None
) -> type[StorageFactory]:
    """The factory class for *name*: a registered storage, zlib+NAME over a
    registered storage that wraps, or a column *options* configure.

    Raises StorageError naming the valid choices for an unknown name.
    """
    if name in registry.REGISTRY:
        return registry.REGISTRY[name]
    found = configured_columns(options)
    if name in found:
        return found[name]
    if name.startswith(ZLIB_PREFIX):
        inner = registry.REGISTRY.get(name.removeprefix(ZLIB_PREFIX))
        if inner is not None and inner.wraps_storage:
            return zlib_of(inner)
        wraps = [n for n, f in registry.REGISTRY.items() if f.wraps_storage]
        raise StorageError(
            f"unknown storage {name!r}; zlib+ goes in front of {', '.join(wraps)}"
        )
    raise StorageError(registry.unknown_storage(name))


def known(name: str, options: StorageOptions | None = None) -> bool:
    """True when get(name, options) would find a factory."""
    try:
        factory_class(name, options)
    except StorageError:
        return False
    return True


def get(name: str, options: StorageOptions | None = None) -> StorageFactory:
    """The factory for *name* (see factory_class), made with *options*.

    Raises StorageError naming the valid choices for an unknown name.
    """
    return factory_class(name, options)(options)
