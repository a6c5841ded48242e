"""Databases a user names: a zodburi URI, a ZConfig file, a served target.

The one scheme table (schemes(): what each registered storage's factory
declares in ``uri_schemes``, URIScheme: its server's default port, whether
its resolver opens read-only, whether the URI names a file here; and
zodburi's own demo: and zconfig://) and the one way to open what a URI or a
<zodb> section names, ``open(read_only=...)``, for every command: run and
sweep columns (--storage-uri, --storage-config: storages.configured),
census (scenarios.census.sources) and the load's --target
(scenarios.load.target).  A storage that opens its URIs itself (ZEO over
TCP, RelStorage with the suite's driver choice and MariaDB workarounds)
says so with its factory's uri_opener(); the others go through zodburi.
Before anything opens a database here it is checked without writing
(storages.checks, the factories' check_at()) and its server reached.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import storages.registry as registry
from storages.base import StorageError, StorageFactory, URIScheme
from storages.errors import one_line
from storages.ports import check_reachable

#: A column name: what --storage-uri NAME=URI may call it.
_NAME = re.compile(r"^[A-Za-z0-9_.+-]+$")


def section_type(section: Any) -> str:
    """A ZConfig section datatype's type name (``filestorage``)."""
    config = getattr(section, "config", None)
    getter = getattr(config, "getSectionType", None)
    return str(getter()) if getter is not None else ""


def with_query(uri: str, extra: str) -> str:
    return f"{uri}{'&' if '?' in uri else '?'}{extra}"


def _check_tcp(host: str, port: int, what: str, timeout: float = 3.0) -> None:
    """StorageError unless a TCP connection to the server of *what* opens."""
    check_reachable(host, port, f"the server of {what}", timeout)


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
    """The schemes a URI may use: zodburi's resolvers (entry point group
    zodburi.resolvers) and every scheme a registered storage declares (one
    that opens its URIs itself, uri_opener(), needs no resolver)."""
    from importlib.metadata import entry_points

    resolved = {ep.name for ep in entry_points(group="zodburi.resolvers")}
    return sorted(resolved | set(registry.schemes()))


@dataclasses.dataclass(frozen=True)
class URISource:
    """A zodburi URI, with zlib+ in front for compression."""

    uri: str

    @property
    def zlib(self) -> bool:
        return self.uri.startswith("zlib+")

    @property
    def base_uri(self) -> str:
        return self.uri.removeprefix("zlib+")

    @property
    def scheme(self) -> str:
        return self.base_uri.partition(":")[0]

    def entry(self) -> tuple[URIScheme, type[StorageFactory] | None]:
        """The scheme table's entry (a scheme no storage declares: one
        with nothing to check and no server to reach)."""
        return registry.schemes().get(self.scheme, (URIScheme(self.scheme), None))

    def validate(self) -> None:
        """StorageError for a URI no resolver takes (before anything opens)."""
        if ":" not in self.base_uri:
            raise StorageError(f"not a URI: {self.uri!r} (e.g. file:///abs/Data.fs)")
        if self.scheme not in uri_schemes():
            raise StorageError(
                f"no resolver for {self.scheme}: URIs ({self.uri}); choose from "
                + ", ".join(f"{s}:" for s in uri_schemes())
            )

    def check_files(self, must_exist: bool = False, read_only: bool = False) -> None:
        """Check, without writing, what the URI names on this machine
        (storages.checks): damage is refused before anything opens it."""
        from storages.checks import check_uri

        check_uri(self.base_uri, must_exist, read_only)

    def existing_path(self) -> Path | None:
        """The file or directory a storage's local URI (file://, bdb://)
        names when it exists (None: a new one, or not local)."""
        scheme, factory = self.entry()
        if not scheme.local or factory is None:
            return None
        rest = self.base_uri.partition("://")[2]
        path = Path(unquote(rest.partition("?")[0]))
        return path if path.exists() else None

    def is_new(self) -> bool:
        """The URI names a database on this machine not made yet."""
        scheme, factory = self.entry()
        return scheme.local and factory is not None and self.existing_path() is None

    def held_elsewhere(self) -> bool:
        """Another process has the database open for writing (a ZEO
        server): a read-only look sees it as it was when opened."""
        _, factory = self.entry()
        path = self.existing_path()
        return factory is not None and path is not None and factory.held_at(path)

    def reach(self) -> None:
        """StorageError when the server the URI names on a TCP host (its
        scheme's default_port when it names none) does not answer; a Unix
        socket, or a bare localhost a driver may reach by its socket, is
        left to the driver."""
        scheme, _ = self.entry()
        if scheme.default_port is None:
            return
        where = urlsplit("http" + self.base_uri[len(self.scheme) :])
        try:
            named_port = where.port
        except ValueError:
            raise StorageError(f"bad port in {self.uri!r}") from None
        host = where.hostname
        if (host and host != "localhost") or named_port:
            _check_tcp(host or "127.0.0.1", named_port or scheme.default_port, self.uri)

    def resolve(
        self, read_only: bool, wait_timeout: float | None = None
    ) -> tuple[Callable[[], Any], dict[str, Any]]:
        """(what opens the storage, ZODB.DB keywords the URI gives)."""
        scheme, factory = self.entry()
        uri = self.base_uri
        if factory is not None:
            opener = factory.uri_opener(uri, read_only, wait_timeout)
            if opener is not None:
                return opener, {}
        import zodburi

        if read_only and scheme.read_only and "read_only=" not in uri:
            uri = with_query(uri, "read_only=1")
        for key in filter(None, scheme.query.split("&")):
            if key.partition("=")[0] + "=" not in uri:
                uri = with_query(uri, key)
        try:
            return zodburi.resolve_uri(uri)  # type: ignore[no-any-return]
        except Exception as e:
            raise StorageError(f"bad URI {self.uri}: {one_line(e)}") from None

    def open(self, read_only: bool, wait_timeout: float | None = None) -> Any:
        """The storage the URI names (read-only where its scheme can be),
        zc.zlibstorage around it for zlib+; StorageError, one line, when
        it cannot be opened."""
        opener, _ = self.resolve(read_only, wait_timeout)
        storage = open_one_line(opener, self)
        if self.zlib:
            from storages.zlib import wrap_zlib

            storage = wrap_zlib(storage)
        return storage

    def read_only_opener(self) -> Callable[[], Any] | None:
        """What opens the storage read-only, or None where it cannot be (its
        scheme has no read-only mode) or there is nothing yet (a new file)."""
        scheme, _ = self.entry()
        if not scheme.read_only:
            return None
        if scheme.local and self.existing_path() is None:
            return None  # a new file: nothing to check yet
        opener, _ = self.resolve(read_only=True)
        return opener

    def opener(self) -> tuple[Callable[[], Any], int | None]:
        factory, dbkw = self.resolve(read_only=False)
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


def storage_sections(storage: Any) -> Iterator[Any]:
    """A storage section's datatype and those of the sections it wraps
    (<zlibstorage>, <blobstorage>, <demostorage>)."""
    yield storage
    config = getattr(storage, "config", None)
    for child in (getattr(config, "base", None), *(getattr(config, "factories", ()))):
        if child is not None and hasattr(child, "open"):
            yield from storage_sections(child)


@dataclasses.dataclass(frozen=True)
class ZConfigSource:
    """One <zodb NAME> section of a ZConfig file, parsed again for every
    open: ZConfig's objects are mutable, and the read-only check sets
    read_only on the copy it opens only."""

    path: Path
    index: int

    def section(self) -> Any:
        return parse_zconfig(self.path)[self.index]

    def check_files(self, must_exist: bool = False, read_only: bool = False) -> None:
        """Check, without writing, every database on this machine the
        section opens (storages.checks)."""
        from storages.checks import check_config

        check_config(
            self.path.read_text(), must_exist, read_only, name=self.section().name
        )

    def _storage(self, read_only: bool) -> Any:
        storage = self.section().config.storage
        if read_only:
            for section in storage_sections(storage):
                if hasattr(section.config, "read_only"):
                    section.config.read_only = True
        return storage

    def _local(self) -> Iterator[tuple[type[StorageFactory], Path]]:
        """(factory, path) of each section a storage declares (its
        URIScheme.section): the databases on this machine."""
        table = registry.section_factories()
        for section in storage_sections(self.section().config.storage):
            factory = table.get(section_type(section))
            path = getattr(section.config, "path", None)
            if factory is not None and isinstance(path, str):
                yield factory, Path(path)

    def existing_path(self) -> Path | None:
        for _, path in self._local():
            return path if path.exists() else None
        return None

    def is_new(self) -> bool:
        """A database of the section's on this machine is not made yet."""
        return any(not path.exists() for _, path in self._local())

    def held_elsewhere(self) -> bool:
        return any(f.held_at(p) for f, p in self._local() if p.exists())

    def reach(self) -> None:
        for section in storage_sections(self.section().config.storage):
            for address in getattr(section.config, "server", None) or ():
                where = getattr(address, "address", address)
                if isinstance(where, tuple):
                    _check_tcp(where[0], where[1], f"<zodb> in {self.path}")

    def open(self, read_only: bool, wait_timeout: float | None = None) -> Any:
        """The storage, read-only wherever its sections have a read-only
        mode when *read_only* (a census); StorageError, one line, when it
        cannot be opened."""
        return open_one_line(lambda: self._storage(read_only).open(), self)

    def read_only_opener(self) -> Callable[[], Any] | None:
        storage = self.section().config.storage
        sections = list(storage_sections(storage))
        if not all(hasattr(s.config, "read_only") for s in sections[-1:]):
            return None  # the innermost storage has no read-only mode
        if any(not path.exists() for _, path in self._local()):
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
        raise StorageError(f"{path}: {one_line(e)}") from None
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


def open_one_line(opener: Callable[[], Any], source: Source) -> Any:
    """opener(), its failures one line for the user (StorageError and the
    backends' own one-line errors, every registered storage's
    ``user_errors``, as they are)."""
    mine: tuple[type[Exception], ...] = (StorageError, *registry.user_errors())
    try:
        return opener()
    except mine:
        raise
    except Exception as e:
        raise StorageError(f"cannot open {source.describe()}: {one_line(e)}") from None
