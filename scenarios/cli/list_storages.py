"""vfab-bench storages: the registry, and why a storage is unavailable."""

from __future__ import annotations

import argparse

import storages
from scenarios.errors import EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("storages", help="list the registered storages")
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    for name, factory in storages.REGISTRY.items():
        reason = factory().unavailable()
        note = f" (unavailable: {reason})" if reason else ""
        print(f"{name:10} {factory.description}{note}")
    return EXIT_OK
