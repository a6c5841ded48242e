"""Build and load the client-request extension (_callgrind.c) on demand, with
Python's own compiler and flags, into a cache keyed by source and ABI, so
the rest of the suite installs where valgrind's header or a compiler is
missing (docs/internals.md).
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from types import ModuleType

SOURCE = Path(__file__).with_name("_callgrind.c")

#: Where valgrind's header comes from, for the message when it is missing.
HEADER_HINT = (
    "valgrind's header valgrind/callgrind.h is missing: install valgrind "
    "(Debian and Ubuntu: apt-get install valgrind; Fedora: valgrind-devel)"
)


#: Seconds the compiler may take (a few, here).
BUILD_TIMEOUT_S = 300.0


class BuildError(RuntimeError):
    """The extension cannot be built here; the message says why in one line."""


def cache_dir() -> Path:
    """$VFAB_CACHE_DIR, else $XDG_CACHE_HOME/vfab-loadtest, else
    ~/.cache/vfab-loadtest."""
    if os.environ.get("VFAB_CACHE_DIR"):
        return Path(os.environ["VFAB_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return Path(base) / "vfab-loadtest"


def target(directory: Path | None = None) -> Path:
    """The built file's path: one per source text and Python ABI."""
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    key = hashlib.sha256(SOURCE.read_bytes() + suffix.encode()).hexdigest()[:12]
    return (directory or cache_dir()) / f"_callgrind-{key}{suffix}"


def compiler() -> list[str]:
    """Python's C compiler as an argument list (sysconfig's CC, else cc)."""
    cc = sysconfig.get_config_var("CC") or os.environ.get("CC") or "cc"
    return shlex.split(cc)


def header_present() -> bool:
    include = Path("/usr/include/valgrind/callgrind.h")
    return include.exists() or any(
        (Path(p) / "valgrind" / "callgrind.h").exists()
        for p in os.environ.get("CPATH", "").split(os.pathsep)
        if p
    )


def build(directory: Path | None = None) -> Path:
    """Compile _callgrind.c unless already built; its path.  BuildError in
    one line when no compiler, no header or the compile fails."""
    out = target(directory)
    if out.exists():
        return out
    cc = compiler()
    if shutil.which(cc[0]) is None:
        raise BuildError(
            f"no C compiler ({cc[0]}) to build the callgrind extension: "
            "install gcc (Debian: apt-get install gcc python3-dev)"
        )
    if not header_present():
        raise BuildError(HEADER_HINT)
    paths = sysconfig.get_paths()
    includes = dict.fromkeys([paths["include"], paths["platinclude"]])
    if not (Path(paths["include"]) / "Python.h").exists():
        raise BuildError(
            f"Python's headers are missing ({paths['include']}/Python.h): "
            "install them (Debian: apt-get install python3-dev)"
        )
    # Built beside its final name, then renamed: two runs building at once
    # never load a half-written file.
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".callgrind-", suffix=".so", dir=out.parent)
    except OSError as e:
        raise BuildError(
            f"cannot write the callgrind extension into the cache directory "
            f"{out.parent}: {e.strerror or e}; set VFAB_CACHE_DIR (or HOME, or "
            "XDG_CACHE_HOME) to a directory that can be written"
        ) from None
    os.close(fd)
    command = [
        *cc,
        "-shared",
        "-fPIC",
        "-O2",
        *(f"-I{p}" for p in includes),
        str(SOURCE),
        "-o",
        tmp,
    ]
    try:
        try:
            done = subprocess.run(
                command, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S
            )
        except subprocess.TimeoutExpired:
            raise BuildError(
                f"building the callgrind extension: {cc[0]} did not end within "
                f"{BUILD_TIMEOUT_S:.0f} s"
            ) from None
        if done.returncode != 0:
            lines = [ln for ln in done.stderr.splitlines() if "error" in ln]
            why = (lines or done.stderr.splitlines() or ["no output"])[0].strip()
            raise BuildError(f"building the callgrind extension failed: {why}")
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return out


def load(directory: Path | None = None) -> ModuleType:
    """The extension module, built first if need be."""
    path = build(directory)
    name = "scenarios.counts._callgrind"
    if name in sys.modules:
        return sys.modules[name]
    loader = importlib.machinery.ExtensionFileLoader(name, str(path))
    spec = importlib.util.spec_from_file_location(name, path, loader=loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    sys.modules[name] = module
    return module


def main() -> int:
    """`python -m scenarios.counts.build`: build it now (./bootstrap)."""
    try:
        print(build())
    except BuildError as e:
        print(f"scenarios.counts.build: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
