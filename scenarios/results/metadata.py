"""Metadata recorded with every run: enough to reproduce and compare it."""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import platform
import subprocess
import sys
import types
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any, Protocol

#: Seconds a `git` call may take before the commit is recorded as unknown.
GIT_TIMEOUT_S = 10.0


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
    "zope.interface",
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


def _git(root: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(root), *args],
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.decode("utf-8", "replace") if done.returncode == 0 else None


def project_code(root: Path | None = None) -> dict[str, Any]:
    """The commit of this checkout, and whether its tree differs from it:
    {"commit": sha or None, "dirty": bool or None, "diff": a digest of the
    difference (two patched trees told apart) or None}.  None values where
    it is no git checkout or git is missing."""
    root = root or Path(__file__).resolve().parents[2]
    commit = _git(root, "rev-parse", "HEAD")
    if commit is None:
        return {"commit": None, "dirty": None, "diff": None}
    status = _git(root, "status", "--porcelain", "-z")
    diff = _git(root, "diff", "HEAD", "--binary")
    dirty = None if status is None else bool(status)
    digest = None
    if dirty:
        untracked = [e[3:] for e in (status or "").split("\0") if e.startswith("?? ")]
        h = hashlib.sha256((diff or "").encode())
        for name in sorted(untracked):
            h.update(name.encode())
            try:
                h.update((root / name).read_bytes())
            except OSError:
                pass
        digest = h.hexdigest()[:16]
    return {"commit": commit.strip(), "dirty": dirty, "diff": digest}


def package_sources() -> dict[str, dict[str, Any]]:
    """For each of PACKAGES installed from a checkout or a URL rather than an
    index (pip's direct_url.json, PEP 610): its URL and, from a version
    control system, the commit; {"editable": True} for an editable install."""
    out: dict[str, dict[str, Any]] = {}
    for name in PACKAGES:
        # The first of its distributions that says (a source tree's own
        # .egg-info, first on sys.path, does not).
        found = importlib_metadata.distributions(name=name)
        text = next((t for d in found if (t := d.read_text("direct_url.json"))), None)
        if not text:
            continue
        try:
            data = json.loads(text)
        except ValueError:
            continue
        if not isinstance(data, dict):
            continue
        vcs, dir_info = (
            data[k] if isinstance(data.get(k), dict) else {}
            for k in ("vcs_info", "dir_info")
        )
        out[name] = {
            "url": data.get("url"),
            "commit": vcs.get("commit_id"),
            "editable": bool(dir_info.get("editable")),
        }
    return out


def code() -> dict[str, Any]:
    """The code a release measured: this project's commit and whether its
    tree was patched, and the sources of packages not installed from an
    index (docs/json-format.md).  It runs git: the release's summary
    records it, once."""
    return {"project": project_code(), "packages": package_sources()}


#: The environment variables that choose between a package's C accelerator
#: and its Python implementation (persistent, BTrees, zope.interface and
#: zodbpickle all read PURE_PYTHON): carried into a counted child and
#: recorded with what they chose.
IMPLEMENTATION_VARIABLES = ("PURE_PYTHON",)

#: Per package with a C accelerator, what tells which implementation is
#: loaded: (module, attribute) of a class or function it defines in C.
ACCELERATED = {
    "persistent": ("persistent", "Persistent"),
    "BTrees": ("BTrees.OOBTree", "OOBTree"),
    "zope.interface": ("zope.interface.interface", "InterfaceBase"),
    # ZODB's TimeStamp lives in persistent.
    "TimeStamp": ("persistent.timestamp", "TimeStamp"),
    "zodbpickle": ("zodbpickle.pickle", "Pickler"),
}


def compiled(obj: Any) -> bool:
    """Whether *obj* (a class or function) is defined in C: a function that
    is a builtin, a class none of whose bases defines a Python function."""
    if not isinstance(obj, type):
        return isinstance(obj, types.BuiltinFunctionType)
    return not any(
        isinstance(v, types.FunctionType)
        for cls in obj.__mro__
        for v in vars(cls).values()
    )


def implementations() -> dict[str, str | None]:
    """Per package with a C accelerator, the implementation this process
    loaded ("C" or "Python"), told from the loaded objects, not from any
    variable; None where the package is not installed."""
    import importlib

    out: dict[str, str | None] = {}
    for package, (module, name) in ACCELERATED.items():
        try:
            obj = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            out[package] = None
            continue
        out[package] = "C" if compiled(obj) else "Python"
    return out


def implementation_variables() -> dict[str, str]:
    """IMPLEMENTATION_VARIABLES as this process has them (the set ones)."""
    return {k: os.environ[k] for k in IMPLEMENTATION_VARIABLES if k in os.environ}


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
        "implementations": implementations(),
        "implementation_variables": implementation_variables(),
        "host": {
            "hostname": platform.node(),
            "platform": platform.platform(),
            "machine": platform.machine(),
            "cpu_count": os.cpu_count(),
        },
        "config": config.to_json(),
        "command": sys.argv,
    }


def _shown(value: Any) -> str:
    return "none" if value in (None, "") else str(value)


def _project(meta: dict[str, Any]) -> dict[str, Any]:
    code = meta.get("code")
    project = code.get("project") if isinstance(code, dict) else None
    return project if isinstance(project, dict) else {}


def differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """What differs between the environments two results' metadata record,
    each in a few words, the likeliest cause of a change first: package
    versions ("ZODB 6.4.0 -> 6.2.0"), the implementations loaded
    ("persistent C -> Python"), the project's commit and patched tree,
    Python.  What one side does not record is left out."""
    out: list[str] = []
    va, vb = (m.get("versions") for m in (old, new))
    if isinstance(va, dict) and isinstance(vb, dict):
        for name in [*va, *(k for k in vb if k not in va)]:
            if name in va and name in vb and va[name] != vb[name]:
                out.append(f"{name} {_shown(va[name])} -> {_shown(vb[name])}")
    ia, ib = (m.get("implementations") for m in (old, new))
    if isinstance(ia, dict) and isinstance(ib, dict):
        for name in [*ia, *(k for k in ib if k not in ia)]:
            if name in ia and name in ib and ia[name] != ib[name]:
                out.append(f"{name} {_shown(ia[name])} -> {_shown(ib[name])}")
    pa, pb = _project(old), _project(new)
    if pa.get("commit") and pb.get("commit") and pa["commit"] != pb["commit"]:
        out.append(f"commit {str(pa['commit'])[:10]} -> {str(pb['commit'])[:10]}")
    for side, project in (("old", pa), ("new", pb)) if pa and pb else ():
        other = pb if project is pa else pa
        if project.get("dirty") and (
            not other.get("dirty") or project.get("diff") != other.get("diff")
        ):
            out.append(
                f"the {side} side's tree patched ({_shown(project.get('diff'))})"
            )
    ya, yb = (m.get("python") for m in (old, new))
    if isinstance(ya, dict) and isinstance(yb, dict):
        a, b = (str(y.get("version") or "") for y in (ya, yb))
        ka, kb = (str(y.get("implementation") or "") for y in (ya, yb))
        if ka != kb and ka and kb:
            out.append(f"Python {ka} {a} -> {kb} {b}")
        elif a and b and a != b:
            out.append(f"Python {a} -> {b}")
    return out
