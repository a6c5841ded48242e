"""A data set kept in a directory: `vfab-bench populate` writes it (one
storage's files and MARKER, saying what wrote them), census and serve read
it; a data set is replaced only where the marker says populate wrote it,
and only the entries it lists are removed.
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import storages
from scenarios.data import dataset
from scenarios.errors import ConfigError
from scenarios.progress import Progress, progress_of
from scenarios.results import metadata
from storages import StorageError
from vfab.generate import DataSpec

MARKER = "vfab-dataset.json"
# Marker format history (bump MARKER_VERSION and add a line on change):
#   1 -- {"marker_version": 1, "storage": registry name, "complete": false
#        while populate runs, then true, "entries": [names of the files and
#        directories the storage created], "spec": {"scale", "seed",
#        "size"}, "objects": current objects (len(storage)), "size_bytes",
#        "seconds", "date", "versions"}
MARKER_VERSION = 1


def path_storages() -> list[str]:
    """Registry names of the storages that keep a database in a directory of
    their own and open it in this process (file, bdb), in registry order."""
    return [
        name
        for name, factory in storages.REGISTRY.items()
        if factory.keeps_directory and not factory.starts_server
    ]


def check_path_storage(name: str) -> None:
    """ConfigError naming the valid choices unless *name* is one of them."""
    valid = path_storages()
    if name not in valid:
        raise ConfigError(
            storages.unknown_storage(name, valid, what=" for a database at a path")
        )


def read_marker(directory: Path) -> dict[str, Any] | None:
    """The marker populate left in *directory*, or None."""
    try:
        with open(directory / MARKER, encoding="utf-8") as f:
            data = json.load(f)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (OSError, ValueError) as e:
        raise StorageError(f"cannot read {directory / MARKER}: {e}") from None
    if not isinstance(data, dict) or not isinstance(data.get("storage"), str):
        raise StorageError(f"{directory / MARKER} is not a vfab-bench populate marker")
    return data


def _write_marker(directory: Path, data: dict[str, Any]) -> None:
    tmp = directory / f".{MARKER}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1)
        f.write("\n")
    os.replace(tmp, directory / MARKER)


def _entries(directory: Path) -> set[str]:
    return {n for n in os.listdir(directory) if n not in (MARKER, f".{MARKER}.tmp")}


def _remove(directory: Path, names: set[str] | list[str]) -> None:
    """Remove the entries *names* of *directory* (files, or whole
    directories the storage created), and nothing else."""
    for name in names:
        if not name or "/" in name or name in (".", ".."):
            continue  # a marker we did not write; never leave the directory
        path = directory / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)


def plan(storage: str, path: Path, overwrite: bool) -> list[str]:
    """Check that populate may write *storage* at *path*; return the entries
    of an existing data set that --overwrite will remove (empty when the
    directory is new or empty).  ConfigError otherwise; nothing changed."""
    check_path_storage(storage)
    if not path.exists():
        parent = path.parent
        if not parent.is_dir():
            raise ConfigError(f"directory {parent} does not exist")
        if not os.access(parent, os.W_OK):
            raise ConfigError(f"directory {parent} is not writable")
        return []
    if not path.is_dir():
        raise ConfigError(f"{path} is not a directory (--path names the directory)")
    marker = read_marker(path)
    if marker is None:
        if _entries(path):
            raise ConfigError(
                f"{path} is not empty and holds no data set written by "
                "vfab-bench populate; choose a new or empty directory"
            )
        return []
    if marker["storage"] != storage:
        raise ConfigError(
            f"{path} holds a {marker['storage']} data set, not {storage}; "
            "--overwrite replaces a data set of the same storage only"
        )
    if not marker.get("complete"):
        raise ConfigError(
            f"an earlier populate into {path} did not finish; remove {path} yourself"
        )
    if not overwrite:
        spec = marker.get("spec", {})
        raise ConfigError(
            f"{path} already holds a {storage} data set ({spec.get('size')}, "
            f"seed {spec.get('seed')}); --overwrite replaces it"
        )
    if not os.access(path, os.W_OK):
        raise ConfigError(f"directory {path} is not writable")
    return [str(n) for n in marker.get("entries", [])]


def check_data_set(
    storage: str,
    path: Path,
    options: storages.StorageOptions | None = None,
    recover: bool = False,
) -> str | None:
    """Check the database of the data set at *path* whole, writing nothing
    (the storage's check_existing): StorageError, one line, when it is
    damaged or another process holds it.  Every command runs this before it
    opens an existing data set read-write (populate --overwrite, serve): a
    damaged FileStorage opened read-write is silently cut short.

    With *recover* (--recover), a database whose only fault is a last
    transaction cut by a crash is recovered instead (the storage's
    check_existing with recover); the line saying what was dropped is
    returned."""
    factory = storages.get(storage, options)
    reason = factory.unavailable()
    if reason is not None:
        raise ConfigError(f"storage {storage!r} is not available: {reason}")
    return factory.check_existing(path, recover=recover)


def _check_replaceable(factory: storages.StorageFactory, path: Path) -> None:
    """Open the existing data set once, after check_data_set: a storage
    another process holds (a ZEO server) raises StorageError here, before
    anything is removed."""
    with factory.open(path) as store:
        if dataset.existing(store) is None:
            raise StorageError(
                f"{path} holds no vfab data set although its marker says so; "
                "remove it yourself"
            )
        store.abort()


def populate(
    storage: str,
    path: Path,
    spec: DataSpec,
    seed: int,
    overwrite: bool = False,
    options: storages.StorageOptions | None = None,
    progress: Progress | Callable[[str], None] | None = None,
    checked: bool = False,
) -> dict[str, Any]:
    """Write the data set of *spec* and *seed* with *storage* in the
    directory *path* and keep it; return the marker written.

    A data set being replaced (--overwrite) is checked first
    (check_data_set) unless the caller did (*checked*): a damaged one is
    refused, left as it was.

    On failure or Ctrl-C, what this call created is removed (the directory
    too if it made it) and the exception propagates."""
    say = shown = progress_of(progress, "populate", "objects")
    old_entries = plan(storage, path, overwrite)
    factory = storages.get(storage, options)
    reason = factory.unavailable()
    if reason is not None:
        raise ConfigError(f"storage {storage!r} is not available: {reason}")

    if old_entries:
        if not checked:
            factory.check_existing(path)
        _check_replaceable(factory, path)
        say(f"removing the {storage} data set in {path}: {', '.join(old_entries)}")
        _remove(path, old_entries)
        (path / MARKER).unlink()

    created_dir = not path.exists()
    if created_dir:
        path.mkdir()
    # Anything already here (only what a user added beside a data set being
    # replaced) is not the storage's: never listed, never removed.
    before = _entries(path)
    marker: dict[str, Any] = {
        "marker_version": MARKER_VERSION,
        "storage": storage,
        "complete": False,
        "entries": [],
        "spec": {"scale": spec.scale, "seed": seed, "size": spec.name},
    }
    t0 = time.perf_counter()
    try:
        _write_marker(path, marker)
        with factory.open(path) as store:
            dataset.populate(store, spec, seed, progress=shown)
            db = getattr(store, "db", None)
            objects = len(db.storage) if db is not None else None
        created = _entries(path) - before
        marker.update(
            complete=True,
            entries=sorted(created),
            objects=objects,
            size_bytes=_size(path, created),
            seconds=round(time.perf_counter() - t0, 3),
            date=datetime.datetime.now(datetime.timezone.utc).isoformat(
                timespec="seconds"
            ),
            versions=metadata.versions(),
        )
        _write_marker(path, marker)
    except BaseException:
        _remove(path, _entries(path) - before)
        (path / MARKER).unlink(missing_ok=True)
        (path / f".{MARKER}.tmp").unlink(missing_ok=True)
        if created_dir:
            path.rmdir()
        raise
    return marker


def _size(path: Path, entries: set[str]) -> int:
    """Bytes of the files under *entries* of *path*."""
    from storages.file import directory_size

    total = 0
    for name in entries:
        entry = path / name
        if entry.is_dir():
            total += directory_size(entry, storages.not_storage())
        else:
            total += entry.stat().st_size
    return total
