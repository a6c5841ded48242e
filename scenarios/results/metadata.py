"""Metadata recorded with every run: enough to reproduce and compare it."""

from __future__ import annotations

import datetime
import os
import platform
import sys
from importlib import metadata as importlib_metadata
from typing import Any, Protocol


class Configuration(Protocol):
    """What a run was asked to do (RunConfig, SweepConfig)."""

    def to_json(self) -> dict[str, Any]: ...


#: Distributions whose versions decide the numbers.
PACKAGES = (
    "ZODB",
    "ZEO",
    "persistent",
    "BTrees",
    "transaction",
    "zodbpickle",
    "berkeleydb",
    "RelStorage",
    "vfab-loadtest",
)


def versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            out[name] = importlib_metadata.version(name)
        except importlib_metadata.PackageNotFoundError:
            out[name] = None
    return out


def collect(config: Configuration) -> dict[str, Any]:
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec="seconds"
        ),
        "python": {
            "version": platform.python_version(),
            "implementation": platform.python_implementation(),
            "executable": sys.executable,
        },
        "versions": versions(),
        "host": {
            "hostname": platform.node(),
            "platform": platform.platform(),
            "machine": platform.machine(),
            "cpu_count": os.cpu_count(),
        },
        "config": config.to_json(),
        "command": sys.argv,
    }
