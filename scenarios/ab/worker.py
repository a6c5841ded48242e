"""One side's measuring process: `python -m scenarios.ab.worker [CPU]`, run
with the side's environment's python and the checkout in use on
PYTHONPATH, driven by the parent over a pipe (sides.py).

Requests arrive on stdin, one JSON object a line; each gets one reply line
on the file descriptor the process's stdout was at its start (stdout itself
is then pointed at stderr, so that what pytest, ZODB or a server prints
never mixes with the replies):

    (at start)                        -> {"hello": {python, versions, ...}}
    {"op": "setup", "sources": {...}} -> {"ok": true}
    {"op": "trial", "source": S, "k": K}
                                      -> {"cells": [[col, row, s], ...],
                                          "start": t0, "end": t1}
    {"op": "quit"} or end of input    -> the sources left, exit 0

An error becomes {"error": "one line"}; after one at start or setup the
process exits.  Only the standard library is imported before the hello, so
an environment that cannot run the project says why instead of dying.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
import traceback
from typing import IO, Any


def implementations() -> dict[str, str]:
    """Whether persistent, BTrees and zope.interface run their C code or
    their Python fallback here ("C", "Python"; PURE_PYTHON forces the
    latter)."""
    out: dict[str, str] = {}
    try:
        import persistent

        python = persistent.Persistent.__module__ == "persistent.persistence"
        out["persistent"] = "Python" if python else "C"
    except ImportError:
        pass
    try:
        from BTrees import OOBTree

        py = getattr(OOBTree, "OOBTreePy", None)
        out["BTrees"] = "Python" if OOBTree.OOBTree is py else "C"
    except ImportError:
        pass
    try:
        from zope.interface import interface

        base = getattr(interface, "InterfaceBasePy", None)
        out["zope.interface"] = "Python" if interface.InterfaceBase is base else "C"
    except ImportError:
        pass
    return out


def distributions() -> dict[str, str]:
    """Every installed distribution's version, by its normalized name."""
    from importlib import metadata

    out: dict[str, str] = {}
    for d in metadata.distributions():
        name = d.metadata["Name"]
        if name:
            out[name.lower().replace("_", "-")] = d.version
    return out


def hello() -> dict[str, Any]:
    import scenarios
    from scenarios.results.metadata import package_sources, versions

    return {
        "python": {
            "version": platform.python_version(),
            "implementation": platform.python_implementation(),
            "executable": sys.executable,
            "prefix": sys.prefix,
        },
        "versions": versions(),
        "distributions": distributions(),
        "implementations": implementations(),
        "sources": package_sources(),
        "pure_python": os.environ.get("PURE_PYTHON"),
        "scenarios": os.path.dirname(os.path.abspath(scenarios.__file__)),
        "cpu": sorted(os.sched_getaffinity(0)),
        "missing": missing(),
    }


def missing() -> dict[str, str]:
    """Cell source -> the module it needs that this environment lacks (the
    micro-benchmarks' pytest and pytest-benchmark)."""
    import importlib.util

    for module in ("pytest", "pytest_benchmark"):
        if importlib.util.find_spec(module) is None:
            return {"micro": module}
    return {}


def one_line(e: BaseException) -> str:
    text = " ".join(str(e).split()) or type(e).__name__
    return (
        f"{type(e).__name__}: {text}"
        if not str(e).startswith(type(e).__name__)
        else text
    )


class Worker:
    """The request loop (see the module docstring)."""

    def __init__(self, replies: IO[str]) -> None:
        self.replies = replies
        self.sources: dict[str, Any] = {}

    def reply(self, message: dict[str, Any]) -> None:
        self.replies.write(json.dumps(message) + "\n")
        self.replies.flush()

    def setup(self, request: dict[str, Any]) -> None:
        from scenarios.ab.cells import build

        for name, params in request["sources"].items():
            source = build(name, params)
            source.__enter__()
            self.sources[name] = source

    def trial(self, request: dict[str, Any]) -> dict[str, Any]:
        source = self.sources[request["source"]]
        start = time.monotonic()
        cells = source.trial(int(request["k"]))
        end = time.monotonic()
        return {
            "cells": [[col, row, s] for (col, row), s in cells.items()],
            "start": start,
            "end": end,
        }

    def close(self) -> None:
        while self.sources:
            _, source = self.sources.popitem()
            source.__exit__(None, None, None)

    def serve(self, requests: IO[str]) -> None:
        for line in requests:
            request = json.loads(line)
            op = request.get("op")
            if op == "quit":
                return
            try:
                if op == "setup":
                    self.setup(request)
                    self.reply({"ok": True})
                elif op == "trial":
                    self.reply(self.trial(request))
                else:
                    self.reply({"error": f"unknown request {op!r}"})
            except Exception as e:  # noqa: BLE001 - told to the parent, one line
                from scenarios.ab.cells import Unavailable

                traceback.print_exc(file=sys.stderr)
                if isinstance(e, Unavailable):
                    self.reply({"error": str(e), "input": True})
                else:
                    self.reply({"error": one_line(e)})
                if op == "setup":
                    return


def main(argv: list[str]) -> int:
    # The replies' own descriptor; stdout from now on is stderr.
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    if argv:
        os.sched_setaffinity(0, {int(argv[0])})
    worker = Worker(replies)
    try:
        from scenarios.interrupts import defer_interrupts

        defer_interrupts()  # SIGTERM cleans up as Ctrl-C does: servers stopped
        worker.reply({"hello": hello()})
    except Exception as e:  # noqa: BLE001 - an environment that cannot run us
        worker.reply({"error": one_line(e)})
        return 1
    try:
        worker.serve(sys.stdin)
    except KeyboardInterrupt:
        return 1
    finally:
        worker.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
