"""Checking the databases a zodburi URI or a ZConfig text names, before
anything opens them.

For commands that open a database the user named rather than one a
factory made (census on a URI; run and sweep on --storage-uri or
--storage-config): call check_uri() or check_config() first.  They find
every FileStorage and BDBStorage the URI or configuration opens (inside
wrappers too: <zlibstorage>, <demostorage>, a <zodb> database) and check
each one whole without writing (storages.file.check_filestorage,
storages.bdb.check_environment).  Other storages (ZEO, RelStorage, a
mapping) have no file to check here: their servers own their data.
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from storages.base import StorageError


def check_filestorage_at(
    path: Path, must_exist: bool = False, read_only: bool = False
) -> None:
    """Check the FileStorage file *path* a command is about to open.

    Missing: fine unless *must_exist* (opening it read-write creates it).
    Locked by another process: StorageError, unless *read_only* (a reader
    may look; a short last transaction is then a commit in progress).
    """
    from storages.file import check_filestorage, lock_held

    if not path.exists():
        if must_exist:
            raise StorageError(f"no FileStorage at {path}")
        return
    if not path.is_file():
        raise StorageError(f"{path} is not a file (a FileStorage is one file)")
    held = lock_held(Path(f"{path}.lock"))
    if held and not read_only:
        raise StorageError(f"{path} is locked: another process has it open")
    check_filestorage(path, in_use=held)


def check_environment_at(path: Path, must_exist: bool = False) -> None:
    """Check the BDBStorage environment directory *path* a command is about
    to open.  Missing or empty: fine unless *must_exist* (BDBStorage creates
    one there)."""
    from storages.bdb.check import check_environment
    from storages.bdb.factory import berkeleydb_missing

    if not must_exist and (
        not path.exists() or (path.is_dir() and not any(path.iterdir()))
    ):
        return
    reason = berkeleydb_missing()
    if reason:
        raise StorageError(reason)
    check_environment(path)


def check_uri(uri: str, must_exist: bool = False, read_only: bool = False) -> None:
    """Check what the zodburi *uri* opens: file://, bdb:// and zconfig://
    (the configuration file's storages); other schemes are not files and
    are left to their storage.  *read_only*: the caller opens it
    read-only (a file another process holds may then be read)."""
    scheme, sep, rest = uri.partition("://")
    if not sep:
        return
    path = Path(os.path.normpath(unquote(rest.partition("?")[0])))
    if scheme == "file":
        read_only = read_only or "read_only=1" in rest.partition("?")[2]
        check_filestorage_at(path, must_exist, read_only)
    elif scheme == "bdb":
        check_environment_at(path, must_exist)
    elif scheme == "zconfig":
        parts = urlsplit(uri)
        try:
            text = Path(os.path.normpath(parts.path)).read_text(encoding="utf-8")
        except OSError as e:
            raise StorageError(f"cannot read {parts.path}: {e.strerror}") from None
        check_config(text, must_exist, read_only, name=parts.fragment or None)


#: The schema zodburi's zconfig:// resolver reads a file with.
_SCHEMA = b"""
<schema>
    <import package="ZODB"/>
    <multisection type="ZODB.storage" attribute="storages" />
    <multisection type="ZODB.database" attribute="databases" />
</schema>
"""


def check_config(
    text: str,
    must_exist: bool = False,
    read_only: bool = False,
    name: str | None = None,
) -> None:
    """Check every FileStorage and BDBStorage the ZConfig *text* (storage
    or <zodb> sections, %import lines allowed) opens; *name*: only the
    section of that name.  StorageError for text ZConfig refuses."""
    import ZConfig

    try:
        schema = ZConfig.loadSchemaFile(io.BytesIO(_SCHEMA))
        config, _ = ZConfig.loadConfigFile(schema, io.StringIO(text))
    except ZConfig.ConfigurationError as e:
        raise StorageError(f"bad storage configuration: {e}".splitlines()[0]) from None
    for section in [*config.databases, *config.storages]:
        if name is None or section.name == name:
            _check_section(section, must_exist, read_only)


def _check_section(section: Any, must_exist: bool, read_only: bool) -> None:
    """*section*: a ZODB.config.BaseConfig (a storage section's datatype)
    or a <zodb> database section; wrappers are walked into."""
    from ZODB.config import FileStorage, ZODBDatabase

    from storages.bdb.config import BDBStorageConfig

    config = section.config
    if isinstance(section, FileStorage):
        check_filestorage_at(
            Path(config.path), must_exist, read_only or bool(config.read_only)
        )
        return
    if isinstance(section, BDBStorageConfig):
        check_environment_at(Path(config.path), must_exist)
        return
    if isinstance(section, ZODBDatabase):
        _check_section(config.storage, must_exist, read_only)
        return
    # A wrapper (zlibstorage, demostorage, blobstorage...): its sections.
    for attribute in config.getSectionAttributes():
        value = getattr(config, attribute, None)
        for inner in value if isinstance(value, list) else [value]:
            if hasattr(inner, "config") and hasattr(inner, "open"):
                _check_section(inner, must_exist, read_only)
