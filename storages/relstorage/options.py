"""What the relstorage-* storages' options share: the port type, redact()
for what is shown of a DSN, and what to install.  Each backend's options
are in its module (postgresql.PGOptions, mysql.MySQLOptions)."""

from __future__ import annotations

import importlib.util
from urllib.parse import urlsplit, urlunsplit

from storages.options import at_least

#: The extra that installs RelStorage and the pure-Python drivers.
EXTRA = "pip install 'vfab-loadtest[relstorage]' (or ./bootstrap)"


#: A port of the server the suite starts (0: a free one).
port_type = at_least(0, 65535)


def redact(dsn: str | None) -> str | None:
    """*dsn* without its password (for JSON metadata and messages)."""
    if dsn is None:
        return None
    if "://" in dsn:
        url = urlsplit(dsn)
        if url.password is None:
            return dsn
        netloc = url.netloc.rpartition("@")
        user = netloc[0].partition(":")[0]
        return urlunsplit(url._replace(netloc=f"{user}:***@{netloc[2]}"))
    return " ".join(
        "password=***" if item.startswith("password=") else item for item in dsn.split()
    )


def relstorage_missing() -> str | None:
    if importlib.util.find_spec("relstorage") is None:
        return f"RelStorage is not installed: {EXTRA}"
    return None
