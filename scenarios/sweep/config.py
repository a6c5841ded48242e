"""What a sweep measures: the container variants, the defaults, and the
validated, frozen SweepConfig."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any, ClassVar

from scenarios.errors import ConfigError
from scenarios.matrix.config import check_commits
from storages import StorageOptions, options_json
from storages.options import shown
from vfab.codec import Derived
from vfab.generate import DEFAULT_SEED
from vfab.model import ProcessStep

DEFAULT_OBJECTS: tuple[int, ...] = (100, 1_000, 10_000, 50_000)
DEFAULT_STORAGES: tuple[str, ...] = ("mapping", "file", "zeo")

#: Key under the suite's root container for the committed objects.
SWEEP_KEY = "sweep"


@dataclasses.dataclass(frozen=True)
class Variant:
    name: str
    description: str
    build: Callable[[list[ProcessStep]], Any]


def _btree(steps: list[ProcessStep]) -> Any:
    from BTrees.IOBTree import IOBTree

    tree = IOBTree()
    for i, step in enumerate(steps):
        tree[i] = step
    return tree


def _flat_list(steps: list[ProcessStep]) -> Any:
    from persistent.list import PersistentList

    return PersistentList(steps)


#: name -> variant, in the order of the report's columns.
VARIANTS: dict[str, Variant] = {
    v.name: v
    for v in (
        Variant("btree", "the steps in an IOBTree {i -> step}", _btree),
        Variant("list", "the steps in one flat PersistentList", _flat_list),
    )
}


@dataclasses.dataclass(frozen=True)
class SweepConfig(Derived):
    """What a sweep measures; validated here, recorded in its metadata.

    warmups: untimed trials per storage and variant, at the smallest
    transaction size, before the timed ones.
    """

    storages: tuple[str, ...] = DEFAULT_STORAGES
    objects: tuple[int, ...] = DEFAULT_OBJECTS
    variants: tuple[str, ...] = tuple(VARIANTS)
    repeat: int = 3
    warmups: int = 1
    seed: int = DEFAULT_SEED
    options: StorageOptions = StorageOptions()

    #: Its JSON (codec.derived): every registered option group's options.
    JSON_AS: ClassVar[dict[str, Callable[[Any], Any]]] = {"options": options_json}

    def __post_init__(self) -> None:
        check_commits(self.storages, self.options, "sweep")
        if len(set(self.variants)) != len(self.variants):
            raise ConfigError("a variant is named twice")
        if not self.variants:
            raise ConfigError("no variant named")
        for v in self.variants:
            if v not in VARIANTS:
                raise ConfigError(
                    f"unknown variant {v!r}; choose from {', '.join(VARIANTS)}"
                )
        if not self.objects:
            raise ConfigError("no transaction size named")
        if min(self.objects) < 1:
            raise ConfigError(
                f"objects per transaction must be at least 1, not {min(self.objects)}"
            )
        if len(set(self.objects)) != len(self.objects):
            raise ConfigError("a transaction size is named twice")
        if self.repeat < 1:
            raise ConfigError(f"--repeat must be at least 1, not {self.repeat}")
        if self.warmups < 0:
            raise ConfigError(f"--warmups must be 0 or more, not {self.warmups}")


#: The most objects one timed commit may hold: the sweep keeps every one
#: in memory until the commit (about 1 KB each with its pickle).
MAX_OBJECTS = 10_000_000


def parse_objects(text: str) -> tuple[int, ...]:
    """'100,1000,10k,5e4' -> (100, 1000, 10000, 50000); ValueError otherwise."""
    out = []
    for part in text.split(","):
        part = part.strip().lower().replace("_", "")
        if not part:
            continue
        mult = 1
        if part.endswith("k"):
            part, mult = part[:-1], 1000
        try:
            value = float(part) * mult
        except ValueError:
            raise ValueError(f"not a number of objects: {shown(part)}") from None
        if not math.isfinite(value) or value != int(value) or value < 1:
            raise ValueError(f"not a whole number of objects: {shown(part)}")
        if value > MAX_OBJECTS:
            raise ValueError(
                f"{shown(part)} objects in one transaction: at most {MAX_OBJECTS:,}"
            )
        out.append(int(value))
    if not out:
        raise ValueError("no transaction size given")
    return tuple(out)
