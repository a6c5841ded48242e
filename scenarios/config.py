"""The run configuration: validated once, frozen, recorded in every result."""

from __future__ import annotations

import dataclasses
from typing import Any

import storages
from storages import StorageOptions
from vfab.generate import DEFAULT_SEED, SIZES, DataSpec


class ConfigError(ValueError):
    """Bad input for a run; the CLI prints it as one line and exits 2."""


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """Everything that decides what a run measures."""

    storages: tuple[str, ...] = storages.DEFAULT_STORAGES
    scale: int = 1
    repeat: int = 3
    warmups: int = 1
    seed: int = DEFAULT_SEED
    options: StorageOptions = StorageOptions()

    def __post_init__(self) -> None:
        if not self.storages:
            raise ConfigError("no storage named")
        for name in self.storages:
            if name not in storages.REGISTRY:
                raise ConfigError(
                    f"unknown storage {name!r}; choose from "
                    f"{', '.join(storages.REGISTRY)}"
                )
        if len(set(self.storages)) != len(self.storages):
            raise ConfigError("a storage is named twice")
        if self.scale < 1:
            raise ConfigError(f"scale must be at least 1, not {self.scale}")
        if self.repeat < 1:
            raise ConfigError(f"--repeat must be at least 1, not {self.repeat}")
        if self.warmups < 0:
            raise ConfigError(f"--warmups must be 0 or more, not {self.warmups}")

    @property
    def spec(self) -> DataSpec:
        return DataSpec.for_scale(self.scale)

    @property
    def size(self) -> str:
        return self.spec.name

    def to_json(self) -> dict[str, Any]:
        options = dataclasses.asdict(self.options)
        if options["zeo_address"] is not None:
            host, port = options["zeo_address"]
            options["zeo_address"] = f"{host}:{port}"
        return {
            "storages": list(self.storages),
            "size": self.size,
            "scale": self.scale,
            "repeat": self.repeat,
            "warmups": self.warmups,
            "seed": self.seed,
            "options": options,
        }


def scale_for(size: str | None, scale: int | None) -> int:
    """The scale a --size name or a --scale number asks for."""
    if size is not None and scale is not None:
        raise ConfigError("give --size or --scale, not both")
    if scale is not None:
        if scale < 1:
            raise ConfigError(f"--scale must be at least 1, not {scale}")
        return scale
    size = size or "small"
    if size not in SIZES:
        raise ConfigError(f"unknown size {size!r}; choose from {', '.join(SIZES)}")
    return SIZES[size]
