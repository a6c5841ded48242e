"""What a census found: per class counts and bytes, its revisions' totals,
and the census as JSON (the CENSUS format of scenarios.results.files)."""

from __future__ import annotations

import dataclasses
import datetime
import sys
from typing import Any

from scenarios.results import metadata
from scenarios.results.files import CENSUS
from vfab.codec import KEY, Json, encode


@dataclasses.dataclass(frozen=True)
class ClassCount(Json):
    """One class: current objects reached from the root and their pickle
    bytes; its revisions where the storage iterates."""

    name: str = dataclasses.field(metadata={KEY: "class"})
    count: int
    bytes: int
    revisions: int | None = None
    old_revisions: int | None = None

    @property
    def average(self) -> float:
        return self.bytes / self.count if self.count else 0.0


@dataclasses.dataclass(frozen=True)
class Revisions(Json):
    """The storage's transactions and records up to the census transaction
    ("history" in the file)."""

    transactions: int
    records: int
    current: int  # objects whose latest record holds data
    old: int  # records superseded by a later one
    unreachable: int  # current objects the walk from the root did not reach


@dataclasses.dataclass(frozen=True)
class Census:
    """What one database holds.  Limits: objects reached only through weak
    or cross-database references are not counted (referencesf skips them);
    on ZEO, size and length are what the server last told the client."""

    source: str
    storage: str
    tid: str | None
    tid_time: str | None
    classes: tuple[ClassCount, ...]
    missing: int
    size_bytes: int | None
    directory_bytes: int | None
    storage_len: int | None
    revisions: Revisions | None = dataclasses.field(metadata={KEY: "history"})
    vfab: dict[str, Any] | None
    seconds: float
    warning: str | None = None

    @property
    def objects(self) -> int:
        return sum(c.count for c in self.classes)

    @property
    def pickle_bytes(self) -> int:
        return sum(c.bytes for c in self.classes)

    def get(self, name: str) -> ClassCount | None:
        for c in self.classes:
            if c.name == name:
                return c
        return None

    def counts(self) -> dict[str, int]:
        return {c.name: c.count for c in self.classes}

    def to_json(self) -> dict[str, Any]:
        # The totals after the classes, the seconds rounded (a key given
        # again keeps its place), the metadata of this writing.
        fields = encode(self)
        head = {k: fields.pop(k) for k in ("source", "storage", "tid", "tid_time")}
        return {
            **CENSUS.header(),
            **head,
            "classes": fields.pop("classes"),
            "objects": self.objects,
            "pickle_bytes": self.pickle_bytes,
            **fields,
            "seconds": round(self.seconds, 3),
            "metadata": {
                "date": datetime.datetime.now(datetime.timezone.utc).isoformat(
                    timespec="seconds"
                ),
                "versions": metadata.versions(),
                "command": sys.argv,
            },
        }
