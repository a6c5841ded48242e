"""zeo: a real runzeo server process on 127.0.0.1, reached over TCP.

runzeo serves the factory's backend (a ``servable`` factory: FileStorage
for zeo, BDBStorage for zeo+bdb; the backend's served_section()); in a run
one runzeo serves a batch of fresh storages, one per trial, and outside a
run each store starts its own.  With --zeo-address the store uses that
server instead and starts nothing.

- options: ZEOOptions, the one --zeo-address declaration every subcommand
  uses (add_zeo_address_option), HOST:PORT and port parsing,
  check_reachable().
- server: ZEOServer, one runzeo child process (also `vfab-bench serve`'s
  and the tests'), and the files it writes beside the data (SERVER_FILES).
- pool: ZEOPool, the per-run batches of fresh storages (POOL_SIZE,
  POOL_DISK_BYTES), and renamed_section().
- factory: ZEOFactory (zeo; zeo+bdb builds on it), open_client(), ZEOStore
  and ZEOShared.

Every name below can be imported from ``storages.zeo``: callers (serve,
census, the load, the tests) need ZEO's names, not where each is kept.
"""

from __future__ import annotations

# Kept in storages.ports (every server the suite starts needs them), and
# here with the rest of what a ZEO client or server is given.
from storages.ports import LOCALHOST, check_port_free, free_port
from storages.zeo.factory import (
    STARTED_SERVER_WAIT_TIMEOUT_S,
    WAIT_TIMEOUT_S,
    ZEOFactory,
    ZEOShared,
    ZEOStore,
    open_client,
)
from storages.zeo.options import (
    ZEO_URI_PORT,
    ZEOOptions,
    add_zeo_address_option,
    address_type,
    address_uri,
    check_reachable,
    parse_address,
    port_number,
    uri_address,
)
from storages.zeo.pool import (
    POOL_DISK_BYTES,
    POOL_SIZE,
    ZEOPool,
    bytes_on_disk,
    renamed_section,
)
from storages.zeo.server import SERVER_FILES, ZEOServer

__all__ = [
    "LOCALHOST",
    "POOL_DISK_BYTES",
    "POOL_SIZE",
    "SERVER_FILES",
    "STARTED_SERVER_WAIT_TIMEOUT_S",
    "WAIT_TIMEOUT_S",
    "ZEO_URI_PORT",
    "ZEOFactory",
    "ZEOOptions",
    "ZEOPool",
    "ZEOServer",
    "ZEOShared",
    "ZEOStore",
    "add_zeo_address_option",
    "address_type",
    "address_uri",
    "bytes_on_disk",
    "check_port_free",
    "check_reachable",
    "free_port",
    "open_client",
    "parse_address",
    "port_number",
    "renamed_section",
    "uri_address",
]
