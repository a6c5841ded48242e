"""Checking the databases a zodburi URI or a ZConfig text names, before
anything opens them.

For commands that open a database the user named rather than one a
factory made (census on a URI; run and sweep on --storage-uri or
--storage-config): call check_uri() or check_config() first.  They find
every database on this machine the URI or configuration opens (inside
wrappers too: <zlibstorage>, <demostorage>, a <zodb> database) and ask the
storage that declares its scheme (``uri_schemes``, ``local``) or its
section type (its ``URIScheme.section``) to check it whole without writing
(its factory's check_at()).  A URI's ``data_dir`` query key and a
<relstorage> section's adapter with a ``data-dir`` (RelStorage's SQLite)
name a directory here too: the storage of that scheme checks it.  Other
storages (ZEO, RelStorage on a server, a mapping) have no file to check
here: their servers own their data.
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import storages.registry as registry
from storages.base import StorageError


def check_uri(uri: str, must_exist: bool = False, read_only: bool = False) -> None:
    """Check what the zodburi *uri* opens: a storage's local scheme
    (file://, bdb://) and zconfig:// (the configuration file's storages);
    other schemes are not files and are left to their storage.
    *read_only*: the caller opens it read-only (a file another process
    holds may then be read)."""
    scheme, sep, rest = uri.partition("://")
    if not sep:
        return
    if scheme == "zconfig":
        parts = urlsplit(uri)
        try:
            text = Path(os.path.normpath(parts.path)).read_text(encoding="utf-8")
        except OSError as e:
            raise StorageError(f"cannot read {parts.path}: {e.strerror}") from None
        check_config(text, must_exist, read_only, name=parts.fragment or None)
        return
    declared, factory = registry.schemes().get(scheme, (None, None))
    if declared is None or factory is None:
        return
    query = rest.partition("?")[2]
    read_only = read_only or "read_only=1" in query
    data_dir = parse_qs(query).get("data_dir")
    if data_dir:  # a directory here named in the query (sqlite://?data_dir=)
        factory.check_at(Path(os.path.normpath(data_dir[0])), must_exist, read_only)
        return
    if not declared.local:
        return
    path = Path(os.path.normpath(unquote(rest.partition("?")[0])))
    factory.check_at(path, must_exist, read_only)


#: The schema zodburi's zconfig:// resolver reads a file with.
_SCHEMA = b"""
<schema>
    <import package="ZODB"/>
    <multisection type="ZODB.storage" attribute="storages" />
    <multisection type="ZODB.database" attribute="databases" />
</schema>
"""


def parse_storage_config(text: str) -> Any:
    """The ZConfig *text* as zodburi's zconfig:// resolver reads it (its
    ``storages`` and ``databases``); StorageError for text ZConfig refuses."""
    import ZConfig

    try:
        schema = ZConfig.loadSchemaFile(io.BytesIO(_SCHEMA))
        config, _ = ZConfig.loadConfigFile(schema, io.StringIO(text))
    except ZConfig.ConfigurationError as e:
        raise StorageError(f"bad storage configuration: {e}".splitlines()[0]) from None
    return config


def check_config(
    text: str,
    must_exist: bool = False,
    read_only: bool = False,
    name: str | None = None,
) -> None:
    """Check every database on this machine the ZConfig *text* (storage
    or <zodb> sections, %import lines allowed) opens; *name*: only the
    section of that name.  StorageError for text ZConfig refuses."""
    config = parse_storage_config(text)
    for section in [*config.databases, *config.storages]:
        if name is None or section.name == name:
            _check_section(section, must_exist, read_only)


def _check_section(section: Any, must_exist: bool, read_only: bool) -> None:
    """*section*: a ZODB.config.BaseConfig (a storage section's datatype)
    or a <zodb> database section; wrappers are walked into."""
    from ZODB.config import ZODBDatabase

    config = section.config
    factory = registry.section_factories().get(config.getSectionType())
    if factory is not None:
        read_only = read_only or bool(getattr(config, "read_only", False))
        factory.check_at(Path(config.path), must_exist, read_only)
        return
    if isinstance(section, ZODBDatabase):
        _check_section(config.storage, must_exist, read_only)
        return
    adapter = getattr(config, "adapter", None)
    data_dir = getattr(getattr(adapter, "config", None), "data_dir", None)
    if isinstance(data_dir, str):
        # <relstorage> over a backend keeping its files here (<sqlite3>):
        # the storage whose URI scheme names that backend checks them.
        _check_adapter(adapter, Path(data_dir), must_exist, read_only)
        return
    # A wrapper (zlibstorage, demostorage, blobstorage...): its sections.
    for attribute in config.getSectionAttributes():
        value = getattr(config, attribute, None)
        for inner in value if isinstance(value, list) else [value]:
            if hasattr(inner, "config") and hasattr(inner, "open"):
                _check_section(inner, must_exist, read_only)


def _check_adapter(
    adapter: Any, data_dir: Path, must_exist: bool, read_only: bool
) -> None:
    """The files of a <relstorage> section's adapter section in *data_dir*,
    checked by the storage declaring that backend's URI scheme."""
    from storages.relstorage.uri import RELSTORAGE_SCHEMES

    backend = adapter.config.getSectionType()
    for scheme, name in RELSTORAGE_SCHEMES.items():
        if name == backend:
            _, factory = registry.schemes().get(scheme, (None, None))
            if factory is not None:
                factory.check_at(data_dir, must_exist, read_only)
