"""A ZEO server's status: its counters, read by a short-lived client."""

from __future__ import annotations

from typing import Any

from storages import StorageOptions
from storages.zeo import open_client


def server_status(address: tuple[str, int]) -> dict[str, Any]:
    """The ZEO server's counters (connections, commits, conflicts, ...), as
    seen by a short-lived client of its own: 'connections' counts that
    client too, 'clients' does not."""
    storage = open_client(address, StorageOptions())
    try:
        status = dict(storage.server_status())
    finally:
        storage.close()
    status["clients"] = int(status.get("connections", 1)) - 1
    return status
