"""Output files (--json, --markdown, --plot, --html): checked before any
work, written whole or not at all.

check_outputs() runs before a command does its work and refuses, as one
ConfigError line, an output that could not or should not be written: an
empty name, a file that exists (without --force), a directory, a missing or
read-only parent, a format the writer does not know (by suffix), a device
we may not write, and a new file on a disk too full to take one block (a
probe file is written and removed at once).  An existing file is never
touched before the work is done.

write_text() and write_with() then write through a temporary file in the
same directory and a rename, so a full disk or a crash leaves either the
old file or the new one, never half of one; a device (/dev/stdout,
/dev/null, /dev/full) is written directly.  A failure is one OutputError
line; for a result file (write_json) the data are first saved to a fallback
file in the temporary directory, so that a run's work is not lost because
its output could not be written.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scenarios import argtypes
from scenarios.errors import ConfigError

#: Output option -> the suffixes its writer understands (others: any).
FORMATS: dict[str, tuple[str, ...]] = {
    "plot": (".png", ".svg", ".pdf"),
    "html": (".html", ".htm"),
}

#: Bytes the probe writes into a new output's directory.
PROBE_BYTES = 4096


class OutputError(ConfigError):
    """An output that cannot be written (one line, exit status 2)."""


def add_output_options(p: argparse.ArgumentParser, **outputs: str) -> None:
    """One --NAME FILE per keyword (its help), and --force; check_outputs()
    refuses them before any work, write_text()/write_json() writes them."""
    g = p.add_argument_group("outputs")
    for name, help in outputs.items():
        g.add_argument(f"--{name}", type=argtypes.path, metavar="FILE", help=help)
    flags = "/".join(f"--{name}" for name in outputs)
    g.add_argument("--force", action="store_true", help=f"replace existing {flags}")
    p.set_defaults(outputs=tuple(outputs))


def check_outputs(args: argparse.Namespace) -> None:
    """check_output for every output add_output_options declared, and no
    file named twice."""
    paths = []
    for name in args.outputs:
        path = getattr(args, name)
        check_output(path, args.force, FORMATS.get(name, ()), f"--{name}")
        if path is not None and not _is_device(path):
            paths.append(os.path.realpath(path))
    if len(set(paths)) != len(paths):
        raise ConfigError("one file is named by two outputs")


def _is_device(path: Path) -> bool:
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def check_output(
    path: Path | None, force: bool, suffixes: tuple[str, ...] = (), flag: str = ""
) -> None:
    """Refuse, before the work, an output we could not or should not write."""
    if path is None:
        return
    what = f"{flag} " if flag else ""
    if not str(path).strip():
        raise ConfigError(f"{what}needs a file name, not an empty one")
    if suffixes and path.suffix.lower() not in suffixes:
        raise ConfigError(
            f"{what}{path}: unknown format {path.suffix or '(no suffix)'!r}; "
            f"use {', '.join(suffixes)}"
        )
    if path.is_dir():
        raise ConfigError(f"{path} is a directory")
    if _is_device(path):
        try:  # permission only: a probe byte would reach the device
            with open(path, "ab"):
                pass
        except OSError as e:
            raise OutputError(f"cannot write {path}: {e.strerror}") from None
        return
    if path.exists() and not force:
        raise ConfigError(f"{path} exists; use --force to replace it")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise ConfigError(f"directory {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise ConfigError(f"directory {parent} is not writable")
    _probe(parent, path)


def _probe(parent: Path, path: Path) -> None:
    """Write one block into *parent* and remove it: a full disk shows now."""
    try:
        fd, name = tempfile.mkstemp(prefix=".vfab-probe-", dir=parent)
    except OSError as e:
        raise OutputError(f"cannot write {path}: {e.strerror}") from None
    try:
        os.write(fd, b"\0" * PROBE_BYTES)
        os.fsync(fd)
    except OSError as e:
        raise OutputError(f"cannot write {path}: {e.strerror}") from None
    finally:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(name)


def write_with(path: Path, force: bool, writer: Callable[[Path], None]) -> None:
    """Have *writer* write the file at the path it is given, then put it at
    *path* (replacing it only with *force*); OutputError on failure."""
    if _is_device(path):
        try:
            writer(path)
        except OSError as e:
            raise OutputError(f"cannot write {path}: {e.strerror}") from None
        return
    parent = path.parent if str(path.parent) else Path(".")
    fd, name = tempfile.mkstemp(prefix=".vfab-", suffix=path.suffix, dir=parent)
    os.close(fd)
    tmp = Path(name)
    try:
        writer(tmp)
        if force:
            os.replace(tmp, path)
        else:
            os.link(tmp, path)  # fails if the file appeared meanwhile
    except FileExistsError:
        raise OutputError(f"{path} exists; use --force to replace it") from None
    except OSError as e:
        raise OutputError(f"cannot write {path}: {e.strerror}") from None
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()


def write_text(path: Path, text: str, force: bool) -> None:
    """*text* into *path*, whole or not at all."""

    def write(target: Path) -> None:
        with open(target, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            if not _is_device(target):
                os.fsync(f.fileno())

    write_with(path, force, write)


def write_json(path: Path, data: Any, force: bool) -> None:
    """*data* as the JSON every command writes (indented, one final newline).
    If *path* cannot be written, the JSON is kept in a fallback file first
    and the error names it."""
    text = json.dumps(data, indent=1) + "\n"
    try:
        write_text(path, text, force)
    except OutputError as e:
        kept = _fallback(text)
        where = f"; the results are saved in {kept}" if kept else ""
        raise OutputError(f"{e}{where}") from None


def _fallback(text: str) -> str | None:
    try:
        fd, name = tempfile.mkstemp(prefix="vfab-results-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        return name
    except OSError:
        return None
