"""Metadata recorded with every run: enough to reproduce and compare it."""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import platform
import subprocess
import sys
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
