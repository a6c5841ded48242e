"""Output files, checked before the work and written whole or not at all.

check_output() refuses an output that cannot or should not be written; the
writers go through a temporary file and a rename (a device directly), so a
crash leaves the old file or the new one, never half of one.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gzip
import json
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scenarios.errors import ConfigError
from scenarios.printable import ERRORS

#: Bytes the probe writes into a new output's directory.
PROBE_BYTES = 4096


class OutputError(ConfigError):
    """An output that cannot be written (one line, exit status 2)."""


def command_inputs(args: Any) -> list[Path]:
    """The local files and directories a command reads: every path argument
    that is not an output (a result file, --path, --storage-config), and
    the local paths inside its URI and target arguments (file:// URIs, a
    ZConfig file given as --target, sqlite:// data directories)."""
    outputs = {*getattr(args, "outputs", ()), *OUTPUT_DIRECTORIES}
    found: list[Path] = []
    for name, value in vars(args).items():
        if name in outputs:
            continue
        for item in value if isinstance(value, (list, tuple)) else (value,):
            if isinstance(item, Path):
                found.append(item)
            elif isinstance(item, str) and item and name in URI_ARGUMENTS:
                found.extend(_paths_in(item))
    return found


#: Path arguments that are outputs of their own (run --profile DIR).
OUTPUT_DIRECTORIES = ("profile",)

#: Arguments whose text may name local files (URIs, NAME=URI, a ZConfig
#: file as --target).
URI_ARGUMENTS = ("uri", "target", "storage_uri")


def _paths_in(text: str) -> list[Path]:
    """Local paths a URI, NAME=URI or a file name given as text names."""
    from urllib.parse import parse_qs, urlsplit

    from storages.named import URISource

    _, sep, rest = text.partition("=")
    candidates = [text, rest] if sep and "://" in rest else [text]
    out = []
    for candidate in candidates:
        if "://" not in candidate:
            if os.path.lexists(candidate):
                out.append(Path(candidate))
            continue
        parts = urlsplit(candidate)
        # The schemes whose path is a file or directory here, as their
        # storages declare them (URIScheme.local).
        scheme, _ = URISource(candidate).entry()
        if parts.path and scheme.local:
            out.append(Path(parts.path))
        for key in ("data_dir", "path", "envdir"):
            out.extend(Path(v) for v in parse_qs(parts.query).get(key, ()))
    return out


def check_not_an_input(path: Path, inputs: list[Path], flag: str) -> None:
    """Refuse an output that is one of *inputs*, or lies inside an input
    directory (a database directory the command reads)."""
    target = os.path.realpath(path)
    for source in inputs:
        real = os.path.realpath(source)
        if target == real or _same_file(path, source):
            raise ConfigError(
                f"{flag} {path} is one of this command's inputs; "
                "name another file (--force replaces only an old output)"
            )
        if os.path.isdir(real) and target.startswith(real.rstrip(os.sep) + os.sep):
            raise ConfigError(
                f"{flag} {path} is inside {source}, which this command reads; "
                "write it elsewhere"
            )


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def database_kind(path: Path) -> str | None:
    """What database *path* (an existing file) is, or None, as the storage
    whose file it is says (storages.registry.file_kind: from its first
    bytes, or its name beside a database)."""
    from storages.registry import file_kind

    return file_kind(path)


def is_device(path: Path) -> bool:
    """A character device (/dev/null, /dev/full, a terminal), or the pipe
    or socket this process's stdout or stderr is (/dev/stdout when piped):
    written directly, never through a rename."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    if stat.S_ISCHR(mode):
        return True
    return not stat.S_ISREG(mode) and _is_own_stream(path)


def _is_own_stream(path: Path) -> bool:
    for fd in (1, 2):
        try:
            if os.path.samestat(os.stat(path), os.fstat(fd)):
                return True
        except OSError:
            continue
    return False


def check_output(
    path: Path | None, force: bool, suffixes: tuple[str, ...] = (), flag: str = ""
) -> None:
    """Refuse, before the work, an output we could not or should not write:
    an empty name, an unknown suffix, a directory, a FIFO, socket or block
    device, an existing database file (with --force too: --force replaces an
    old output, never an input), an existing file without *force*, a missing
    or read-only parent, a disk too full for one block (a probe)."""
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
    kind = _not_regular(path)
    if kind is not None:
        raise ConfigError(f"{what}{path} is {kind}, not a regular file")
    if is_device(path):
        try:  # permission only: a probe byte would reach the device
            with open(path, "ab"):
                pass
        except OSError as e:
            raise OutputError(f"cannot write {path}: {e.strerror}") from None
        return
    database = database_kind(path) if path.exists() else None
    if database is not None:
        raise ConfigError(
            f"{what}{path} is {database}; it is never replaced (--force or not)"
        )
    if path.exists() and not force:
        raise ConfigError(f"{path} exists; use --force to replace it")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise ConfigError(f"directory {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise ConfigError(f"directory {parent} is not writable")
    _probe(parent, path)


def _not_regular(path: Path) -> str | None:
    """What an existing *path* is when an output cannot be it (a FIFO, a
    socket, a block device), or None (missing, regular, a character device,
    or this process's own stdout or stderr)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode) or stat.S_ISCHR(mode) or _is_own_stream(path):
        return None
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISBLK(mode):
        return "a block device"
    return "not a file"


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


@dataclasses.dataclass(frozen=True)
class Writer:
    """An output too large to hold as text: *write* writes it at the path
    it is given (a temporary file write_with() then renames)."""

    write: Callable[[Path], None]


def write_with(path: Path, force: bool, writer: Callable[[Path], None]) -> None:
    """Have *writer* write the file at the path it is given, then put it at
    *path* (replacing it only with *force*); OutputError on failure."""
    if is_device(path):
        try:
            writer(path)
        except OSError as e:
            raise OutputError(f"cannot write {path}: {e.strerror}") from None
        return
    parent = path.parent if str(path.parent) else Path(".")
    try:  # the directory may have gone since check_output()
        fd, name = tempfile.mkstemp(prefix=".vfab-", suffix=path.suffix, dir=parent)
    except OSError as e:
        raise OutputError(f"cannot write {path}: {e.strerror}") from None
    tmp = Path(name)
    try:
        try:
            # mkstemp makes the file 0600; an output is meant to be read (a
            # published report): the mode open() would give it, the umask's.
            os.fchmod(fd, 0o666 & ~current_umask())
        finally:
            os.close(fd)
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


def current_umask() -> int:
    """This process's umask (read by setting it and setting it back)."""
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


def write_text(path: Path, text: str, force: bool) -> None:
    """*text* into *path*, whole or not at all; in UTF-8, a character it
    cannot hold (a lone surrogate: a file name that was not UTF-8) as a
    visible escape (scenarios.printable)."""

    def write(target: Path) -> None:
        with open(target, "w", encoding="utf-8", errors=ERRORS) as f:
            f.write(text)
            f.flush()
            if not is_device(target):
                os.fsync(f.fileno())

    write_with(path, force, write)


def write_pyperf(path: Path, text: str, force: bool) -> None:
    """A pyperf suite's JSON *text* into *path*, gzipped when the name ends
    in .gz (pyperf reads such a name as gzip), whole or not at all."""
    if path.suffix != ".gz":
        write_text(path, text, force)
        return

    def write(target: Path) -> None:
        with open(target, "wb") as raw:
            with gzip.GzipFile(filename=path.stem, mode="wb", fileobj=raw) as f:
                f.write(text.encode("utf-8"))
            raw.flush()
            if not is_device(target):
                os.fsync(raw.fileno())

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
    """The fallback file's name, or None when it could not be written whole
    (a full disk, ulimit -f): then no part of it is left behind."""
    try:
        fd, name = tempfile.mkstemp(prefix="vfab-results-", suffix=".json")
    except OSError:
        return None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        return name
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(name)
        return None
