"""Storage options: one frozen group per storage module, held together.

A storage module declares its options as an OptionGroup (a frozen
dataclass of defaults that adds its own argparse options); StorageOptions
is the immutable set of groups a factory is made with.  DBOptions holds the
ZODB.DB options every database takes; ConfiguredOptions the databases the
user names (storages.configured) and whether the suite may pack a database
it did not create (those and a --zeo-address server).  Nothing here imports a backend.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from vfab.codec import Derived

G = TypeVar("G", bound="OptionGroup")


@dataclasses.dataclass(frozen=True)
class OptionGroup(Derived):
    """One storage module's options: a frozen dataclass of defaults.

    Field names are the argparse dests and the keys of to_json() (the
    codec's, a value its JSON_AS names shown through that), so from_args()
    and to_json() need no code in a subclass; a subclass adds its
    command-line options in add_arguments() and documents each field in its
    docstring.
    """

    #: Title of the argparse group (groups with the same title share one).
    title: ClassVar[str] = "storage options"

    @classmethod
    def add_arguments(cls, group: argparse._ArgumentGroup) -> None:
        """Add this group's options (their dests are the field names)."""

    @classmethod
    def from_args(cls: type[G], args: argparse.Namespace) -> G:
        """The options parsed into *args*; defaults for those absent."""
        given = {
            f.name: getattr(args, f.name)
            for f in dataclasses.fields(cls)
            if hasattr(args, f.name)
        }
        return cls(**given)


@dataclasses.dataclass(frozen=True)
class DBOptions(OptionGroup):
    """ZODB.DB options, common to every storage that has a database.

    cache_size: ZODB connection cache target, in objects (None: ZODB's
        default, 400).
    """

    cache_size: int | None = None

    @classmethod
    def add_arguments(cls, group: argparse._ArgumentGroup) -> None:
        add_size_option(
            group,
            "--cache-size",
            "OBJECTS",
            "ZODB connection cache size in objects (default: ZODB's, 400; "
            "run: a million for xlarge)",
            at_least(1, MAX_CACHE_OBJECTS),
        )

    def db_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ZODB.DB built from these options."""
        return {} if self.cache_size is None else {"cache_size": self.cache_size}


#: The largest whole number an option takes unless it says otherwise: a
#: signed 64-bit integer, what the libraries below (ZODB, Berkeley DB,
#: SQLite) can hold.
MAX_INT = 2**63 - 1


#: The largest ZODB connection cache target (objects): a C int in
#: persistent's cache.
MAX_CACHE_OBJECTS = 2**31 - 1


def shown(text: str, limit: int = 24) -> str:
    """A value as an error message repeats it: at most *limit* characters
    (a 400-digit number is not worth a screenful)."""
    text = str(text).strip()
    return repr(text) if len(text) <= limit else repr(text[: limit - 3] + "...")


def show_number(value: float) -> str:
    """A bound as --help prints it: 2**63-1, 1,000,000, 0.5."""
    if value == MAX_INT:
        return "2**63-1"
    if value == -MAX_INT - 1:
        return "-2**63"
    if isinstance(value, int) or float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:g}"


def at_least(minimum: int, maximum: int = MAX_INT) -> Callable[[str], int]:
    """An argparse type: a whole number from *minimum* to *maximum* (option
    groups and the CLI share it); its `bounds` attribute is the range, which
    --help prints."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"not a whole number: {shown(text)}"
            ) from None
        if not minimum <= value <= maximum:
            raise argparse.ArgumentTypeError(
                f"must be from {show_number(minimum)} to {show_number(maximum)}, "
                f"not {shown(text)}"
            )
        return value

    parse.bounds = (minimum, maximum)  # type: ignore[attr-defined]
    return parse


positive_int = at_least(1)


def add_size_option(
    group: Any,
    flag: str,
    unit: str,
    help: str,
    parse: Callable[[str], int] = positive_int,
) -> None:
    """A cache size option: a positive number of *unit* (within *parse*'s
    bounds), None when absent."""
    group.add_argument(flag, type=parse, metavar=unit, help=help)


class StorageOptions:
    """An immutable set of option groups, at most one of each class.

    ``options.get(ZEOOptions)`` is the group given, or that class's
    defaults; ``options.replace(group)`` a copy with *group* instead.
    """

    __slots__ = ("_groups",)
    _groups: dict[type[OptionGroup], OptionGroup]

    def __init__(self, *groups: OptionGroup) -> None:
        by_class: dict[type[OptionGroup], OptionGroup] = {}
        for group in groups:
            by_class[type(group)] = group
        object.__setattr__(self, "_groups", by_class)

    def __setattr__(self, name: str, value: Any) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled for the processes a run starts (run --counts).
        return (StorageOptions, tuple(self._groups.values()))

    def get(self, cls: type[G]) -> G:
        group = self._groups.get(cls)
        return group if isinstance(group, cls) else cls()

    def replace(self, *groups: OptionGroup) -> StorageOptions:
        return StorageOptions(*self._groups.values(), *groups)

    def __iter__(self) -> Iterator[OptionGroup]:
        return iter(self._groups.values())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, StorageOptions):
            return NotImplemented
        return self._groups == other._groups

    def __hash__(self) -> int:
        return hash(tuple(self._groups.values()))

    def __repr__(self) -> str:
        return f"StorageOptions({', '.join(map(repr, self))})"

    def to_json(self, groups: tuple[type[OptionGroup], ...] = ()) -> dict[str, Any]:
        """The groups held, and the defaults of *groups* not held, as one
        JSON object."""
        result: dict[str, Any] = {}
        for cls in dict.fromkeys((*groups, *self._groups)):
            result.update(self.get(cls).to_json())
        return result

    @property
    def cache_size(self) -> int | None:
        """The common ZODB.DB option (DBOptions.cache_size)."""
        return self.get(DBOptions).cache_size

    def db_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ZODB.DB built from these options."""
        return self.get(DBOptions).db_kwargs()


@dataclasses.dataclass(frozen=True)
class ListenOptions(OptionGroup):
    """Where a server the suite starts for other processes listens: the
    runzeo of zeo's share() and the database server of a RelStorage
    factory that starts one (``starts_server``).  `vfab-bench serve` sets
    it from --host and --port; no command line adds it to a run, whose
    servers listen on 127.0.0.1.

    host: an address or name of this machine (IPv6 too).
    port: 0 for the storage's own choice (its --zeo-port, --pg-port or
        --mysql-port, else a free one).
    """

    host: str = "127.0.0.1"
    port: int = 0


@dataclasses.dataclass(frozen=True)
class ConfiguredOptions(OptionGroup):
    """Databases the user names, and whether the suite may pack them.

    storage_config: a ZConfig file; each <zodb NAME> section is a column.
    storage_uri: zodburi URIs ("URI" or "NAME=URI"), each a column.
    pack: run the pack row on these databases (and a --zeo-address server)
        too; pack removes old revisions of the whole database, which is the
        user's, so it is off unless asked.
    """

    title: ClassVar[str] = "databases the suite did not create"
    JSON_AS: ClassVar[dict[str, Callable[[Any], Any]]] = {
        "storage_config": lambda path: None if path is None else str(path)
    }

    storage_config: Path | None = None
    storage_uri: tuple[str, ...] = ()
    pack: bool = False

    @classmethod
    def add_arguments(cls, group: argparse._ArgumentGroup) -> None:
        add_configured_arguments(group)
        group.add_argument(
            "--pack",
            action="store_true",
            help="also pack databases the suite did not create (--storage-config, "
            "--storage-uri, --zeo-address): the pack row packs the whole database",
        )

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ConfiguredOptions:
        path = getattr(args, "storage_config", None)
        return cls(
            storage_config=None if path is None else Path(path).absolute(),
            storage_uri=tuple(getattr(args, "storage_uri", None) or ()),
            pack=bool(getattr(args, "pack", False)),
        )


def add_configured_arguments(group: Any) -> None:
    """--storage-config FILE and --storage-uri [NAME=]URI (repeatable) on
    *group*: the one declaration run, sweep and census use."""
    group.add_argument(
        "--storage-config",
        type=Path,
        metavar="FILE",
        help="a ZODB ZConfig file: each <zodb NAME> section is a storage "
        "column named NAME (%%import lines load other storages' sections)",
    )
    group.add_argument(
        "--storage-uri",
        action="append",
        metavar="[NAME=]URI",
        help="a zodburi URI (file://, zeo://, memory://, sqlite://, postgres://, "
        "mysql://, bdb://; zlib+ in front compresses): a storage column named "
        "NAME, or the URI; repeatable",
    )
