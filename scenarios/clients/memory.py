"""The memory client processes need: more clients than the memory
available holds are refused before any starts (on this machine, or on a
worker's host as it reports)."""

from __future__ import annotations

from scenarios.errors import ConfigError

#: Resident memory of one client process (ZODB, ZEO or RelStorage, its
#: caches), with room: a ZEO client measured 40 MB here at the small size;
#: more clients than the available memory holds at this size are refused.
CLIENT_MB = 70
#: Memory of a client beyond its process's, when several share one (its
#: connection, its cache of up to 400 objects): reckoned, with room.
SHARED_CLIENT_MB = 5


def check_memory(
    clients: int,
    available_mb: float | None = None,
    per_process: int = 1,
    where: str = "",
) -> None:
    """ConfigError when *clients*, *per_process* to a process, would not
    fit in the memory available now (Linux's MemAvailable; unknown
    elsewhere: not checked) on this machine, or *where* it was read."""
    if available_mb is None:
        available_mb = mem_available_mb()
    if available_mb is None:
        return
    processes = -(-clients // max(1, per_process))
    need = processes * CLIENT_MB + (clients - processes) * SHARED_CLIENT_MB
    if need > available_mb:
        per = (
            f"{CLIENT_MB} MB per client process"
            if per_process <= 1
            else f"{CLIENT_MB} MB per process and {SHARED_CLIENT_MB} MB per "
            "client beyond its first"
        )
        raise ConfigError(
            f"{clients} clients need about {need} MB ({per}); "
            f"{available_mb:.0f} MB available{where}"
        )


def mem_available_mb() -> float | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None
