"""vfab-bench storages: the registry, whether each storage runs here, and if
not, why and how to get it."""

from __future__ import annotations

import argparse

import storages
from scenarios.errors import EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "storages",
        help="list the registered storages, whether each is usable here, and "
        "if not why and how to get it",
    )
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    """One line per storage (no header: the first word is the name):
    name, usable here (yes/no), description, and for an unusable one why
    and how to get it (the reason says both)."""
    width = max(len(name) for name in storages.REGISTRY)
    for name, factory in storages.REGISTRY.items():
        reason = factory().unavailable()
        usable, note = ("no ", f" (unavailable: {reason})") if reason else ("yes", "")
        print(f"{name:{width}}  {usable}     {factory.description}{note}")
    return EXIT_OK
