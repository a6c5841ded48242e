"""The registry: storage names -> factory classes, and what callers need of it.

The built-in storages come first, in the order of the report's columns,
then those other packages declare in the entry point group
``vfab_loadtest.storages`` (each entry point names a StorageFactory
subclass, e.g. ``mystore = mypackage.storage:MyFactory``).  An entry point
that cannot be loaded is registered under its name as a storage that is
unavailable, with the reason, rather than breaking every command.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from typing import Any

from storages import base
from storages.base import DBOptions, OptionGroup, StorageError, StorageFactory
from storages.bdb.factory import BDBFactory, ZEOBDBFactory
from storages.configured import ConfiguredOptions, columns
from storages.file import FileFactory
from storages.mapping import MappingFactory
from storages.memory import MemoryFactory
from storages.relstorage.factory import FACTORIES as RELSTORAGE_FACTORIES
from storages.zeo import ZEOFactory
from storages.zlib import PREFIX as ZLIB_PREFIX
from storages.zlib import ZlibFileFactory, zlib_of

#: The entry point group other packages register storages in.
ENTRY_POINT_GROUP = "vfab_loadtest.storages"

BUILT_IN: tuple[type[StorageFactory], ...] = (
    MemoryFactory,
    MappingFactory,
    FileFactory,
    ZlibFileFactory,
    BDBFactory,
    ZEOFactory,
    ZEOBDBFactory,
    *RELSTORAGE_FACTORIES,
)

#: What `vfab-bench run` measures when --storage is not given: those that
#: need no server of their own beyond runzeo (relstorage-sqlite is embedded).
DEFAULT_STORAGES: tuple[str, ...] = (
    "memory",
    "mapping",
    "file",
    "bdb",
    "zeo",
    "relstorage-sqlite",
)


def _broken(entry_name: str, reason: str) -> type[StorageFactory]:
    """A factory that only says why the entry point *entry_name* failed."""

    class BrokenFactory(StorageFactory):
        name = entry_name
        description = "storage from an entry point that could not be loaded"

        def unavailable(self) -> str | None:
            return reason

        def open(self, directory: Path) -> base.Store:
            raise StorageError(f"storage {self.name!r} is not available: {reason}")

    return BrokenFactory


def _from_entry_points(taken: Iterable[str]) -> list[type[StorageFactory]]:
    found: list[type[StorageFactory]] = []
    names = set(taken)
    for entry in metadata.entry_points(group=ENTRY_POINT_GROUP):
        if entry.name in names:
            continue  # a built-in (or an earlier entry point) keeps its name
        names.add(entry.name)
        try:
            factory = entry.load()
        except Exception as e:  # a broken plugin must not break the suite
            reason = f"entry point {entry.value!r} failed: {type(e).__name__}: {e}"
            found.append(_broken(entry.name, reason))
            continue
        if not (isinstance(factory, type) and issubclass(factory, StorageFactory)):
            reason = f"entry point {entry.value!r} is not a StorageFactory subclass"
            found.append(_broken(entry.name, reason))
        elif factory.name != entry.name:
            reason = (
                f"entry point {entry.name!r} names a factory called {factory.name!r}"
            )
            found.append(_broken(entry.name, reason))
        else:
            found.append(factory)
    return found


def _load() -> dict[str, type[StorageFactory]]:
    registry = {factory.name: factory for factory in BUILT_IN}
    for factory in _from_entry_points(registry):
        registry[factory.name] = factory
    return registry


#: name -> factory class, in report column order.
REGISTRY: dict[str, type[StorageFactory]] = _load()


def unknown_storage(
    name: str, choices: Iterable[str] | None = None, what: str = ""
) -> str:
    """The one message for a name that is not a storage (*what* says what
    kind was asked for, e.g. " for a database at a path")."""
    valid = list(REGISTRY if choices is None else choices)
    return f"unknown storage {name!r}{what}; choose from {', '.join(valid)}"


def configured_columns(
    options: base.StorageOptions | None,
) -> dict[str, type[StorageFactory]]:
    """The columns --storage-config and --storage-uri name in *options*
    (storages.configured), in order; StorageError for bad input or a column
    named like a registered storage."""
    found = columns(options)
    for name in found:
        if name in REGISTRY or name.removeprefix(ZLIB_PREFIX) in REGISTRY:
            raise StorageError(
                f"storage column {name!r} has a registered storage's name; "
                "name it otherwise (<zodb OTHER>, or --storage-uri OTHER=URI)"
            )
    return dict(found)


def factory_class(
    name: str, options: base.StorageOptions | None = None
) -> type[StorageFactory]:
    """The factory class for *name*: a registered storage, zlib+NAME over a
    registered storage that wraps, or a column *options* configure.

    Raises StorageError naming the valid choices for an unknown name.
    """
    if name in REGISTRY:
        return REGISTRY[name]
    found = configured_columns(options)
    if name in found:
        return found[name]
    if name.startswith(ZLIB_PREFIX):
        inner = REGISTRY.get(name.removeprefix(ZLIB_PREFIX))
        if inner is not None and inner.wraps_storage:
            return zlib_of(inner)
        wraps = [n for n, f in REGISTRY.items() if f.wraps_storage]
        raise StorageError(
            f"unknown storage {name!r}; zlib+ goes in front of {', '.join(wraps)}"
        )
    raise StorageError(unknown_storage(name))


def known(name: str, options: base.StorageOptions | None = None) -> bool:
    """True when get(name, options) would find a factory."""
    try:
        factory_class(name, options)
    except StorageError:
        return False
    return True


def get(name: str, options: base.StorageOptions | None = None) -> StorageFactory:
    """The factory for *name* (see factory_class), made with *options*.

    Raises StorageError naming the valid choices for an unknown name.
    """
    return factory_class(name, options)(options)


def option_groups() -> tuple[type[OptionGroup], ...]:
    """Every registered storage's option groups, each once, DBOptions and
    ConfiguredOptions (--storage-config, --storage-uri, --pack) first."""
    groups: dict[type[OptionGroup], None] = {DBOptions: None, ConfiguredOptions: None}
    for factory in REGISTRY.values():
        groups.update(dict.fromkeys(factory.option_groups))
    return tuple(groups)


def add_storage_options(parser: argparse.ArgumentParser) -> None:
    """Add every registered storage's options to *parser*, one argparse
    group per title."""
    titled: dict[str, Any] = {}
    for group in option_groups():
        if group.title not in titled:
            titled[group.title] = parser.add_argument_group(group.title)
        group.add_arguments(titled[group.title])


def options_from_args(args: argparse.Namespace) -> base.StorageOptions:
    """The StorageOptions parsed into *args* by add_storage_options."""
    return base.StorageOptions(*(g.from_args(args) for g in option_groups()))


def options_json(options: base.StorageOptions) -> dict[str, Any]:
    """*options* as the JSON object of run and sweep metadata: every
    registered group, at its defaults where *options* holds none."""
    return options.to_json(option_groups())


def user_errors() -> tuple[type[Exception], ...]:
    """Every registered storage's ``user_errors``."""
    errors: dict[type[Exception], None] = {}
    for factory in REGISTRY.values():
        errors.update(dict.fromkeys(factory.user_errors))
    return tuple(errors)


def not_storage() -> tuple[str, ...]:
    """Every registered storage's ``not_storage`` names: what a directory
    that any of them (or a runzeo serving one) wrote holds beside its data."""
    names: dict[str, None] = {}
    for factory in REGISTRY.values():
        names.update(dict.fromkeys(factory.not_storage))
    return tuple(names)
