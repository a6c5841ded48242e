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

import storages.base as base
from storages.base import (
    ConfiguredOptions,
    DBOptions,
    OptionGroup,
    StorageError,
    StorageFactory,
    URIScheme,
)
from storages.bdb.factory import BDBFactory, ZEOBDBFactory
from storages.file import FileFactory
from storages.mapping import MappingFactory
from storages.memory import MemoryFactory
from storages.relstorage.backends import FACTORIES as RELSTORAGE_FACTORIES
from storages.zeo import ZEOFactory
from storages.zlib import ZlibFileFactory

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


def summary_rows() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Every registered storage's ``summary_rows``, each once, in registry
    order: the rows of the report's summary table that read jar_stats."""
    rows: dict[tuple[str, tuple[str, ...]], None] = {}
    for factory in REGISTRY.values():
        rows.update(dict.fromkeys(factory.summary_rows))
    return tuple(rows)


def not_storage() -> tuple[str, ...]:
    """Every registered storage's ``not_storage`` names: what a directory
    that any of them (or a runzeo serving one) wrote holds beside its data."""
    names: dict[str, None] = {}
    for factory in REGISTRY.values():
        names.update(dict.fromkeys(factory.not_storage))
    return tuple(names)


#: zodburi's own schemes, which no storage of the registry declares.
ZODBURI_SCHEMES = (URIScheme("demo"), URIScheme("zconfig", local=True))


def report_note(name: str, stats: dict[str, Any] | None) -> str | None:
    """The report's clause on how storage *name* was set up, from a trial's
    jar_stats() (StorageFactory.report_note); None when there is nothing to
    say.  A column the registry does not hold (a --storage-uri or
    --storage-config one) gets the first clause a registered storage reads
    in its stats: the same stats come from the same storage classes."""
    if not stats:
        return None
    factory = REGISTRY.get(name)
    if factory is not None:
        return factory.report_note(stats)
    notes = (f.report_note(stats) for f in REGISTRY.values())
    return next((n for n in notes if n), None)


def file_kind(path: Path) -> str | None:
    """What database file *path* is, as the storage whose file it is says
    (StorageFactory.file_kind: "a FileStorage", "a SQLite database"), or
    None: not one of theirs, or missing."""
    try:
        with open(path, "rb") as f:
            head = f.read(16)
    except OSError:
        return None
    for factory in REGISTRY.values():
        kind = factory.file_kind(Path(path), head)
        if kind is not None:
            return kind
    return None


def schemes() -> dict[str, tuple[URIScheme, type[StorageFactory] | None]]:
    """Scheme name -> (its URIScheme, the factory declaring it, or None for
    zodburi's own): the one scheme table, from the registry."""
    table: dict[str, tuple[URIScheme, type[StorageFactory] | None]] = {}
    for factory in REGISTRY.values():
        for scheme in factory.uri_schemes:
            table.setdefault(scheme.name, (scheme, factory))
    for scheme in ZODBURI_SCHEMES:
        table.setdefault(scheme.name, (scheme, None))
    return table


def section_factories() -> dict[str, type[StorageFactory]]:
    """ZConfig section type (``filestorage``) -> the factory whose
    ``uri_schemes`` name it (URIScheme.section): the sections whose
    ``path`` is checked here."""
    table: dict[str, type[StorageFactory]] = {}
    for factory in REGISTRY.values():
        for scheme in factory.uri_schemes:
            if scheme.section is not None:
                table.setdefault(scheme.section, factory)
    return table
