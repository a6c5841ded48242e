"""What `vfab-bench choose` measures: the candidates (registry names), the
client counts, the windows, and a --from source; the presets (--quick).

Candidates are picked by capability, never by name: a ZODB database whose
data several processes share (``shared``), or one process keeps on disk
and runzeo could serve (``keeps_directory`` and ``servable``: FileStorage,
Berkeley DB), measured at one client only ("one process only").
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import storages
from scenarios.errors import ConfigError
from scenarios.scale.config import MAX_CLIENTS

#: Client counts by default: a few points up to 16.
DEFAULT_CLIENTS = (1, 4, 16)
QUICK_CLIENTS = (1, 8)


@dataclasses.dataclass(frozen=True)
class Preset:
    """Window lengths of a run (--quick, or the defaults)."""

    clients: tuple[int, ...]
    duration_s: float
    warmup_s: float
    windows: int


DEFAULT = Preset(DEFAULT_CLIENTS, duration_s=8.0, warmup_s=2.0, windows=4)
QUICK = Preset(QUICK_CLIENTS, duration_s=3.0, warmup_s=1.0, windows=3)


def one_process(factory: Any) -> bool:
    """A candidate only one process can open (measured at one client)."""
    return not factory.shared


def is_candidate(factory: Any) -> bool:
    """Whether choose can measure this storage: a ZODB database, shared
    between processes, or kept on disk by one process that runzeo's
    section names (its client process opens that section)."""
    if not factory.has_database:
        return False
    return bool(factory.shared or (factory.keeps_directory and factory.servable))


def candidates(options: storages.StorageOptions) -> list[str]:
    """Every registered storage choose can measure that runs here."""
    out = []
    for name, cls in storages.REGISTRY.items():
        if is_candidate(cls) and storages.get(name, options).unavailable() is None:
            out.append(name)
    return out


@dataclasses.dataclass(frozen=True)
class ChooseConfig:
    """The storages, client counts and windows of one choose run; *source*:
    --from's database (a path or URI as typed), None for the virtual fab's
    mix."""

    storages: tuple[str, ...]
    clients: tuple[int, ...] = DEFAULT_CLIENTS
    duration_s: float = DEFAULT.duration_s
    warmup_s: float = DEFAULT.warmup_s
    windows: int = DEFAULT.windows
    scale: int = 1
    seed: int = 0
    quick: bool = False
    source: str | None = None
    #: --from: the skew of the reads over the source's oids (Zipf exponent).
    skew: float = 1.0

    def __post_init__(self) -> None:
        if not self.storages:
            raise ConfigError("no storage to choose from")
        if not self.clients or min(self.clients) < 1 or max(self.clients) > MAX_CLIENTS:
            raise ConfigError(f"--clients takes counts from 1 to {MAX_CLIENTS}")
        if not self.duration_s > 0:
            raise ConfigError("--duration must be more than 0 seconds")

    @property
    def source_path(self) -> Path | None:
        return (
            None if self.source is None or "://" in self.source else Path(self.source)
        )

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
