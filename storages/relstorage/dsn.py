"""PostgreSQL's libpq DSN (key=value pairs, or a postgresql:// URI) read
into a dict and written back, as RelStorage's drivers take it: a module of
its own because the PostgreSQL backend and the generic adapter code
(which names the database in its messages) both read it."""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import unquote, urlsplit

from storages.base import StorageError


def parse_dsn(dsn: str) -> dict[str, str]:
    """A libpq DSN, key=value pairs or a postgresql:// URI, as a dict."""
    dsn = dsn.strip()
    if dsn.startswith(("postgresql://", "postgres://")):
        url = urlsplit(dsn)
        parts: dict[str, str] = {}
        if url.hostname:
            parts["host"] = url.hostname
        if url.port:
            parts["port"] = str(url.port)
        if url.username:
            parts["user"] = unquote(url.username)
        if url.password:
            parts["password"] = unquote(url.password)
        if url.path.strip("/"):
            parts["dbname"] = unquote(url.path.strip("/"))
        for item in filter(None, url.query.split("&")):
            key, _, value = item.partition("=")
            parts[key] = unquote(value)
        return parts
    parts = {}
    for item in dsn.split():
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise StorageError(f"bad PostgreSQL DSN {dsn!r}: expected key=value pairs")
        parts[key] = value.strip("'\"")
    return parts


def format_dsn(parts: Mapping[str, str]) -> str:
    for key, value in parts.items():
        if not value or any(c.isspace() or c in "'\"\\" for c in value):
            # RelStorage's pg8000 driver splits the DSN on spaces, unquoted.
            raise StorageError(f"PostgreSQL DSN value for {key} must be one plain word")
    return " ".join(f"{key}={value}" for key, value in parts.items())
