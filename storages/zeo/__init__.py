"""zeo: ZEO in front of another storage (step 1 of the split: the former
module moved whole to factory.py)."""

from storages.zeo.factory import (  # noqa: F401
    LOCALHOST,
    POOL_DISK_BYTES,
    POOL_SIZE,
    SERVER_FILES,
    STARTED_SERVER_WAIT_TIMEOUT_S,
    WAIT_TIMEOUT_S,
    ZEOFactory,
    ZEOOptions,
    ZEOPool,
    ZEOServer,
    ZEOShared,
    ZEOStore,
    add_zeo_address_option,
    address_type,
    bytes_on_disk,
    check_port_free,
    check_reachable,
    free_port,
    open_client,
    parse_address,
    port_number,
    renamed_section,
)
