"""Storages a ZConfig file or a zodburi URI names: the user's databases.

``--storage-config FILE`` (a ZODB configuration file: ``%import`` lines,
then ``<zodb NAME>`` sections each holding one storage section) gives one
column per ``<zodb NAME>``, named NAME.  ``--storage-uri [NAME=]URI`` gives
one column named NAME, or the URI itself.  URIs are zodburi's (file://,
memory://, zeo://, demo:, zconfig://, RelStorage's postgres://, mysql://,
sqlite://, this project's bdb://...); ``zlib+`` in front of any of them puts
zc.zlibstorage over the storage it names (zodburi has no zlib scheme).

The factories are made at run time, one class per column (columns()), and
the registry resolves their names when StorageOptions hold a
ConfiguredOptions (storages.registry.get).  Such a database is the user's:
each trial writes under its own key below root[ROOT_KEY] and removes it when
it ends (ZODBStore's trial_key), and the pack row runs only with --pack.  The
database is opened read-only first (check(), once per column) where the
storage can be: a FileStorage is never opened read-write before a read-only
open succeeded.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import re
from collections.abc import Callable, Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar

from storages.base import (
    DBOptions,
    OptionGroup,
    StorageError,
    StorageFactory,
    StorageOptions,
    Store,
    ZODBStore,
    new_trial_key,
)
from storages.ports import check_reachable

#: URI schemes whose zodburi resolver takes read_only=1.
READ_ONLY_SCHEMES = ("file", "zeo", "postgres", "mysql", "sqlite")

#: A column name: what --storage-uri NAME=URI may call it.
_NAME = re.compile(r"^[A-Za-z0-9_.+-]+$")


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

    def to_json(self) -> dict[str, Any]:
        return {
            "storage_config": (
                None if self.storage_config is None else str(self.storage_config)
            ),
            "storage_uri": list(self.storage_uri),
            "pack": self.pack,
        }


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


# -- the sources: what one column opens ------------------------------------


def split_uri(text: str) -> tuple[str, str]:
    """'NAME=URI' or 'URI' -> (column name, URI).  A '=' before '://' names
    the column (a URI's query has its own '=' after it)."""
    head, sep, _ = text.partition("://")
    if sep and "=" in head:
        name, _, uri = text.partition("=")
        if not _NAME.match(name):
            raise StorageError(f"bad column name {name!r} in --storage-uri {text!r}")
        return name, uri
    return text, text


def uri_schemes() -> list[str]:
    from importlib.metadata import entry_points

    return sorted({ep.name for ep in entry_points(group="zodburi.resolvers")})


def _with_query(uri: str, extra: str) -> str:
    return f"{uri}{'&' if '?' in uri else '?'}{extra}"


def _one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0]}" if text else type(e).__name__


def _check_tcp(host: str, port: int, what: str, timeout: float = 3.0) -> None:
    """StorageError unless a TCP connection to the server of *what* opens."""
    check_reachable(host, port, f"the server of {what}", timeout)


@dataclasses.dataclass(frozen=True)
class URISource:
    """A zodburi URI, with zlib+ in front for compression."""

    uri: str

    @property
    def zlib(self) -> bool:
        return self.uri.startswith("zlib+")

    def check_files(self) -> None:
        """Check, without writing, the FileStorage or Berkeley DB
        environment the URI names (storages.checks): damage is refused
        before anything opens it."""
        from storages.checks import check_uri

        check_uri(self.base_uri)

    @property
    def base_uri(self) -> str:
        return self.uri.removeprefix("zlib+")

    @property
    def scheme(self) -> str:
        return self.base_uri.partition(":")[0]

    def validate(self) -> None:
        """StorageError for a URI no resolver takes (before anything opens)."""
        if ":" not in self.base_uri:
            raise StorageError(f"not a URI: {self.uri!r} (e.g. file:///abs/Data.fs)")
        if self.scheme not in uri_schemes():
            raise StorageError(
                f"no resolver for {self.scheme}: URIs ({self.uri}); choose from "
                + ", ".join(f"{s}:" for s in uri_schemes())
            )

    def _resolve(self, read_only: bool) -> tuple[Callable[[], Any], dict[str, Any]]:
        import zodburi

        uri = self.base_uri
        if read_only and "read_only=" not in uri:
            uri = _with_query(uri, "read_only=1")
        if self.scheme == "zeo" and "wait_timeout=" not in uri:
            uri = _with_query(uri, "wait_timeout=10")
        try:
            return zodburi.resolve_uri(uri)  # type: ignore[no-any-return]
        except Exception as e:
            raise StorageError(f"bad URI {self.uri}: {_one_line(e)}") from None

    def existing_path(self) -> Path | None:
        """The file a file:// URI names when it exists (None: a new one, or
        not a file)."""
        if self.scheme != "file":
            return None
        path = Path(self.base_uri.split("file://", 1)[-1].partition("?")[0])
        return path if path.exists() else None

    def reach(self) -> None:
        """StorageError when the server a zeo://, postgres:// or mysql:// URI
        names on a TCP host does not answer (a Unix socket is left to the
        driver)."""
        default_port = {"zeo": 9991, "postgres": 5432, "mysql": 3306}
        if self.scheme not in default_port:
            return
        from urllib.parse import urlsplit

        where = urlsplit("http" + self.base_uri[len(self.scheme) :])
        try:
            port = where.port or default_port[self.scheme]
        except ValueError:
            raise StorageError(f"bad port in {self.uri!r}") from None
        if where.hostname and where.hostname != "localhost" or where.port:
            _check_tcp(where.hostname or "127.0.0.1", port, self.uri)

    def read_only_opener(self) -> Callable[[], Any] | None:
        if self.scheme not in READ_ONLY_SCHEMES:
            return None
        if self.scheme == "file" and self.existing_path() is None:
            return None  # a new file: nothing to check yet
        factory, _ = self._resolve(read_only=True)
        return factory

    def opener(self) -> tuple[Callable[[], Any], int | None]:
        factory, dbkw = self._resolve(read_only=False)
        return factory, dbkw.get("cache_size")

    def describe(self) -> str:
        return self.uri


def zconfig_source(path: Path, name: str | None = None) -> ZConfigSource:
    """The <zodb NAME> section of the file at *path* (the only one when
    *name* is None); StorageError naming the sections otherwise."""
    path = path.absolute()
    sections = parse_zconfig(path)
    names = [section.name or "" for section in sections]
    if name is None:
        if len(sections) > 1:
            raise StorageError(
                f"{path} has {len(sections)} <zodb> sections: name one with "
                f"--database ({', '.join(names)})"
            )
        return ZConfigSource(path, 0)
    if name not in names:
        raise StorageError(
            f"no <zodb {name}> section in {path}; choose from {', '.join(names)}"
        )
    return ZConfigSource(path, names.index(name))


def _storage_sections(storage: Any) -> Iterator[Any]:
    """A storage section's datatype and those of the sections it wraps
    (<zlibstorage>, <blobstorage>, <demostorage>)."""
    yield storage
    config = getattr(storage, "config", None)
    for child in (getattr(config, "base", None), *(getattr(config, "factories", ()))):
        if child is not None and hasattr(child, "open"):
            yield from _storage_sections(child)


@dataclasses.dataclass(frozen=True)
class ZConfigSource:
    """One <zodb NAME> section of a ZConfig file, parsed again for every
    open: ZConfig's objects are mutable, and the read-only check sets
    read_only on the copy it opens only."""

    path: Path
    index: int

    def section(self) -> Any:
        return parse_zconfig(self.path)[self.index]

    def check_files(self) -> None:
        """Check, without writing, every FileStorage and Berkeley DB
        environment the section opens (storages.checks)."""
        from storages.checks import check_config

        check_config(self.path.read_text(), name=self.section().name)

    def _storage(self, read_only: bool) -> Any:
        storage = self.section().config.storage
        if read_only:
            for section in _storage_sections(storage):
                if hasattr(section.config, "read_only"):
                    section.config.read_only = True
        return storage

    def existing_path(self) -> Path | None:
        for section in _storage_sections(self.section().config.storage):
            path = getattr(section.config, "path", None)
            if isinstance(path, str) and type(section).__name__ == "FileStorage":
                return Path(path) if Path(path).exists() else None
        return None

    def reach(self) -> None:
        for section in _storage_sections(self.section().config.storage):
            for address in getattr(section.config, "server", None) or ():
                where = getattr(address, "address", address)
                if isinstance(where, tuple):
                    _check_tcp(where[0], where[1], f"<zodb> in {self.path}")

    def open_read_only(self) -> Any:
        """The storage, read-only wherever its sections have a read-only
        mode (a census); StorageError when it cannot be opened."""
        self.reach()
        return _open(lambda: self._storage(read_only=True).open(), self)

    def read_only_opener(self) -> Callable[[], Any] | None:
        storage = self.section().config.storage
        sections = list(_storage_sections(storage))
        if not all(hasattr(s.config, "read_only") for s in sections[-1:]):
            return None  # the innermost storage has no read-only mode
        if any(type(s).__name__ == "FileStorage" for s in sections):
            if self.existing_path() is None:
                return None  # a new file: nothing to check yet
        return lambda: self._storage(read_only=True).open()

    def opener(self) -> tuple[Callable[[], Any], int | None]:
        cache_size = self.section().config.cache_size
        return (lambda: self._storage(read_only=False).open()), cache_size

    def describe(self) -> str:
        return f"<zodb {self.section().name}> in {self.path}"


Source = URISource | ZConfigSource


def _parse(path: Path) -> tuple[Any, ...]:
    import ZConfig
    import ZODB.config

    try:
        config, _ = ZConfig.loadConfig(ZODB.config.getDbSchema(), str(path))
    except ZConfig.ConfigurationError as e:
        if "'zodb.database'; 0 found" in str(e):
            raise StorageError(f"{path} holds no <zodb> section") from None
        raise StorageError(f"{path}: {_one_line(e)}") from None
    except OSError as e:
        raise StorageError(f"cannot read {path}: {e.strerror}") from None
    return tuple(config.database or ())


def parse_zconfig(path: Path) -> tuple[Any, ...]:
    """The <zodb> sections of the ZConfig file at *path* (ZODB.config's
    ZODBDatabase objects); StorageError when it is missing, does not parse,
    names an unknown section type or holds no <zodb> section."""
    try:
        path.stat()
    except FileNotFoundError:
        raise StorageError(f"{path} does not exist") from None
    except OSError as e:
        raise StorageError(f"cannot read {path}: {e.strerror}") from None
    if path.is_dir():
        raise StorageError(f"{path} is a directory, not a ZConfig file")
    sections = _parse(path)
    if not sections:
        raise StorageError(f"{path} holds no <zodb> section")
    return sections


# -- the stores and factories ----------------------------------------------


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

    def check(self) -> None:
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
                storage = _open(opener, self.source)
            finally:
                logging.disable(logging.NOTSET)
            storage.close()
        cls._checked = True

    def open(self, directory: Path) -> Store:
        self.check()
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
            opened = _open(open_storage, self.source)
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


def _open(opener: Callable[[], Any], source: Source) -> Any:
    """opener(), its failures one line for the user."""
    from storages import registry

    mine: tuple[type[Exception], ...] = (StorageError, *registry.user_errors())
    try:
        return opener()
    except mine:
        raise
    except Exception as e:
        raise StorageError(f"cannot open {source.describe()}: {_one_line(e)}") from None


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
