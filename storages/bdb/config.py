"""Opening a BDBStorage from configuration text: ZConfig and zodburi.

ZConfig (ZODB.config, runzeo)::

    %import storages.bdb
    <bdbstorage>
      path /var/zodb/main
      cache-size 256MB
      durability write-nosync
    </bdbstorage>

zodburi (entry point ``bdb`` in the group ``zodburi.resolvers``)::

    bdb:///var/zodb/main?cache_size=256MB&durability=write-nosync

Both import berkeleydb only when the storage is opened.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl, unquote

from ZODB.config import BaseConfig

from storages.bdb.options import (
    BDBOptionError,
    BDBOptions,
    parse_bool,
    parse_byte_size,
)

#: ZConfig key (attribute spelling) == BDBStorage keyword.
_KEYS = ("cache_size", "durability", "checkpoint_kbytes", "max_locks", "pack_gc")


class BDBStorageConfig(BaseConfig):
    """Datatype of the <bdbstorage> section (component.xml)."""

    def open(self, database_name: str = "unnamed", databases: Any = None) -> Any:
        from storages.bdb.storage import BDBStorage

        config = self.config
        options = {key: getattr(config, key, None) for key in _KEYS}
        return BDBStorage(config.path, **options)


#: zodburi query parameter -> converter from text.
_QUERY: dict[str, Callable[[str], Any]] = {
    "cache_size": parse_byte_size,
    "durability": str,
    "checkpoint_kbytes": int,
    "max_locks": int,
    "pack_gc": parse_bool,
}


def resolve_uri(uri: str) -> tuple[Callable[[], Any], dict[str, str]]:
    """zodburi resolver: 'bdb:///abs/path?cache_size=64MB' -> (factory,
    the query parameters that are not storage options, for zodburi to
    treat as database keywords)."""
    scheme, sep, rest = uri.partition("://")
    if scheme != "bdb" or not sep:
        raise BDBOptionError(f"not a bdb URI: {uri!r}")
    path, _, query = rest.partition("?")
    path = unquote(path)
    if not os.path.isabs(path):
        raise BDBOptionError(
            f"bdb URI needs an absolute path (bdb:///abs/path), got {uri!r}"
        )
    kwargs: dict[str, Any] = {}
    unused: dict[str, str] = {}
    for key, value in parse_qsl(query, keep_blank_values=True):
        if key in _QUERY:
            try:
                kwargs[key] = _QUERY[key](value)
            except BDBOptionError:
                raise  # says what is wrong already
            except ValueError:
                raise BDBOptionError(f"bad {key} {value!r} in {uri!r}") from None
        else:
            unused[key] = value
    BDBOptions.from_kwargs(kwargs)  # fail now, not when the factory runs
    path = os.path.normpath(path)

    def factory() -> Any:
        from storages.bdb.storage import BDBStorage

        return BDBStorage(path, **kwargs)

    return factory, unused
