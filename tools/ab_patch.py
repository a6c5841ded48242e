"""The patch an environment made by tools/ab_patched_env.py carries, as
vfab_ab_patch.py in its site-packages, imported by a .pth file at every
start of that environment's python (the ab worker, the runzeo it starts,
the matrix's and scale's client processes).  Nothing is imported at
start: an import hook patches a module when it is first imported.

Its settings are vfab_ab_patch.json beside it:

- "store_slower": FileStorage.store takes this share longer than it did
  (0.03: each call busy-waits 3% of the time the real store took, so the
  store is 3% slower whatever the machine's speed);
- "zeo_reply_delay_s": ZEO's server sleeps this long before sending each
  reply (every call that waits for one: a round trip), in its event
  loop, as a slower server would.

`counts` says what the patch did in this process (its test reads it).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

SETTINGS: dict[str, float] = json.loads(
    (Path(__file__).with_suffix(".json")).read_text(encoding="utf-8")
)

#: What the patch did: stores slowed, loop checks of their busy waits,
#: replies delayed.
counts = {"stores": 0, "spins": 0, "replies": 0}


def busy_wait(seconds: float) -> None:
    """Spend *seconds* on this core (not asleep: a slower store computes)."""
    end = time.perf_counter() + seconds
    counts["spins"] += 1
    while time.perf_counter() < end:
        counts["spins"] += 1


def slow_store(module: ModuleType) -> None:
    share = SETTINGS["store_slower"]
    original = module.FileStorage.store

    def store(self: Any, *args: Any, **kw: Any) -> Any:
        began = time.perf_counter()
        try:
            return original(self, *args, **kw)
        finally:
            counts["stores"] += 1
            busy_wait((time.perf_counter() - began) * share)

    module.FileStorage.store = store


def delay_replies(module: ModuleType) -> None:
    delay = SETTINGS["zeo_reply_delay_s"]
    original = module.ServerProtocol.send_reply

    def send_reply(self: Any, *args: Any, **kw: Any) -> Any:
        counts["replies"] += 1
        time.sleep(delay)
        return original(self, *args, **kw)

    module.ServerProtocol.send_reply = send_reply


#: Module -> (the setting that asks for it, its patch).
PATCHES: dict[str, tuple[str, Callable[[ModuleType], None]]] = {
    "ZODB.FileStorage.FileStorage": ("store_slower", slow_store),
    "ZEO.asyncio.server": ("zeo_reply_delay_s", delay_replies),
}


class Patched(importlib.abc.Loader):
    """The module's own loader, then its patch."""

    def __init__(self, loader: Any, patch: Callable[[ModuleType], None]) -> None:
        self.loader = loader
        self.patch = patch

    def create_module(self, spec: Any) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.loader.exec_module(module)
        self.patch(module)


class Finder(importlib.abc.MetaPathFinder):
    def find_spec(
        self, name: str, path: Sequence[str] | None, target: Any = None
    ) -> Any:
        if name not in PATCHES or not SETTINGS.get(PATCHES[name][0]):
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return None
        spec.loader = Patched(spec.loader, PATCHES[name][1])
        return spec


sys.meta_path.insert(0, Finder())
