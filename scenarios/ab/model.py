"""What `vfab-bench ab` measured: each side's environment as its worker saw
it, and every cell's paired samples (pair k: A's and B's trial k), raw;
the verdict is computed from them when shown (judge.py), never stored
alone.  JSON through the codec, under a kind and a version of its own.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from vfab.codec import Json

#: The JSON's kind and version (1: the first).
KIND = "ab"
VERSION = 1


@dataclasses.dataclass(frozen=True)
class SideInfo(Json):
    """One side: how it was named (*kind*, *text*), where its python is, the
    cache key it was built under (None: an existing venv), whether this call
    built it, and what its worker reported (versions, implementations,
    package sources, the checkout's code for a checkout)."""

    name: str
    kind: str
    text: str
    python: str
    key: str | None
    built_now: bool
    hello: dict[str, Any]
    code: dict[str, Any]

    @property
    def versions(self) -> dict[str, str]:
        return dict(self.hello.get("distributions") or {})

    @property
    def implementations(self) -> dict[str, str]:
        return dict(self.hello.get("implementations") or {})


@dataclasses.dataclass(frozen=True)
class PairedCell(Json):
    """One cell: *source* (cells.SOURCES), *column* (a storage), *row* (a
    phase, a benchmark, a matrix cell), and its pairs: a[k] and b[k] are
    trial k on A and on B (seconds)."""

    source: str
    column: str
    row: str
    a: tuple[float, ...]
    b: tuple[float, ...]


@dataclasses.dataclass(frozen=True)
class ABRun(Json):
    """The run: *mode* ("interleaved" or "duet"), the sides, the cells;
    *first*: which side ran first in each round (interleaved); *overlap*:
    per duet pair, the share of the shorter trial both ran at once."""

    mode: str
    a: SideInfo
    b: SideInfo
    cells: tuple[PairedCell, ...]
    metadata: dict[str, Any]
    first: tuple[str, ...] = ()
    overlap: tuple[float, ...] = ()

    def document(self) -> dict[str, Any]:
        """The JSON file's content."""
        return {"kind": KIND, "version": VERSION, **self.to_json()}
