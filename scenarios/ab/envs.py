"""The two environments of `vfab-bench ab`: what a user names (an existing
virtual environment, a requirement list, a package checkout, a release
directory) read into an EnvSpec, and built with uv into a cache keyed by
what the environment contains, so that a second call builds nothing.

What the cache holds is the environment's packages only: this project's
own requirements (setup.cfg's install_requires, plus pytest and
pytest-benchmark for the micro-benchmarks, plus a storage's extra) and the
side's own requirements or checkout on top.  The measuring code itself
(scenarios, storages, vfab, tests/benchmarks) is never copied into the
cache: both sides' workers import it from the checkout in use (PYTHONPATH,
see sides.py), so A and B run the same measuring code by construction, and
a cached environment never holds a stale copy of it.
"""

from __future__ import annotations

import configparser
import contextlib
import dataclasses
import fcntl
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement

from scenarios.errors import ConfigError
from scenarios.interrupts import remove_tree
from scenarios.results.metadata import project_code

#: The checkout in use: what both workers import the measuring code from.
PROJECT_ROOT = Path(__file__).resolve().parents[2]

#: The version of the cache's layout (part of every key: a change of how an
#: environment is built builds anew).
CACHE_FORMAT = 1
#: Written last into a built environment: its spec; without it the
#: directory is an unfinished build, removed and built again.
SPEC_FILE = "vfab-ab-spec.json"
#: What was resolved and installed (uv pip compile's output).
PINS_FILE = "vfab-ab-requirements.txt"
#: `uv pip freeze` of the environment, for the report's differences.
FREEZE_FILE = "vfab-ab-freeze.txt"
#: The longest one uv call may take (seconds): a build from source included.
UV_TIMEOUT_S = 900.0

#: The requirements of the micro-benchmarks' pytest (from the test extra).
MICRO_EXTRA = ("pytest", "pytest-benchmark")
#: Storage name prefix -> the extra it needs.
STORAGE_EXTRAS = {"bdb": "bdb", "zeo+bdb": "bdb", "relstorage": "relstorage"}

KINDS = ("venv", "requirements", "checkout", "release")


@dataclasses.dataclass(frozen=True)
class EnvSpec:
    """One side as the user named it: *kind* (KINDS), the *text* given, the
    directory it names (not for a requirement list), the requirements it
    adds on top of the project's (a list's, a release's recorded
    versions), and for a checkout its code (commit, dirty, diff digest)."""

    text: str
    kind: str
    path: Path | None = None
    requirements: tuple[str, ...] = ()
    code: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def built(self) -> bool:
        """Whether it is built by uv (every kind but an existing venv)."""
        return self.kind != "venv"


@dataclasses.dataclass(frozen=True)
class Env:
    """An environment ready to run a worker: its python, its cache key (None
    for an existing venv) and whether this call built it."""

    spec: EnvSpec
    python: Path
    key: str | None = None
    built_now: bool = False

    @property
    def root(self) -> Path:
        return self.python.parent.parent


def parse(text: str, side: str) -> EnvSpec:
    """The EnvSpec *text* names; ConfigError (one line, naming *side*) when
    it names nothing usable."""
    if not text.strip():
        raise ConfigError(f"{side}: empty environment")
    path = Path(text).expanduser()
    if path.is_dir():
        return _directory(text, path.resolve(), side)
    if path.is_file() and path.suffix == ".txt":
        lines = [ln.split("#", 1)[0].strip() for ln in _read(path, side).splitlines()]
        return _requirements(text, [ln for ln in lines if ln], side)
    if text.startswith(("/", ".", "~")):
        raise ConfigError(f"{side}: {text}: no such directory")
    return _requirements(text, requirement_words(text), side)


def requirement_words(text: str) -> list[str]:
    """Requirements separated by spaces, a direct reference's spaces kept
    ("ZODB @ git+https://...@COMMIT" is one)."""
    out: list[str] = []
    for word in text.split():
        if out and (word.startswith("@") or out[-1].endswith("@")):
            out[-1] += f" {word}"
        else:
            out.append(word)
    return out


def _read(path: Path, side: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{side}: cannot read {path}: {e}") from None


def _requirements(text: str, lines: Sequence[str], side: str) -> EnvSpec:
    if not lines:
        raise ConfigError(f"{side}: {text}: no requirement in it")
    out = []
    for line in lines:
        try:
            out.append(str(Requirement(line)))
        except InvalidRequirement as e:
            why = str(e).splitlines()[0] if str(e) else "invalid"
            raise ConfigError(f"{side}: not a requirement: {line!r} ({why})") from None
    return EnvSpec(text, "requirements", requirements=tuple(out))


def _directory(text: str, path: Path, side: str) -> EnvSpec:
    if (path / "bin" / "python").exists():
        return EnvSpec(text, "venv", path)
    if (path / "release.json").is_file():
        return EnvSpec(text, "release", path, release_requirements(path, side))
    if any((path / n).is_file() for n in ("pyproject.toml", "setup.py", "setup.cfg")):
        if path == PROJECT_ROOT or (path / "scenarios" / "ab").is_dir():
            raise ConfigError(
                f"{side}: {path} is this project: both sides measure with the "
                "checkout in use; name a package's checkout (ZODB, ZEO, ...)"
            )
        return EnvSpec(text, "checkout", path, code=checkout_code(path))
    raise ConfigError(
        f"{side}: {path} is not a virtual environment (no bin/python), a "
        "package checkout (no pyproject.toml, setup.py or setup.cfg) or a "
        "release directory (no release.json)"
    )


def release_requirements(path: Path, side: str) -> tuple[str, ...]:
    """The versions (and, for a package installed from a repository, the
    commit) a release directory recorded, as requirements; ConfigError
    naming what cannot be rebuilt."""
    try:
        data = json.loads(_read(path / "release.json", side))
    except ValueError as e:
        raise ConfigError(f"{side}: {path}/release.json: not JSON ({e})") from None
    meta = data.get("metadata") if isinstance(data, dict) else None
    meta = meta if isinstance(meta, dict) else {}
    versions = meta.get("versions")
    if not isinstance(versions, dict) or not versions.get("ZODB"):
        raise ConfigError(
            f"{side}: {path}: the release recorded no versions to rebuild from"
        )
    code = meta.get("code")
    code = code if isinstance(code, dict) else {}
    sources = code.get("packages")
    sources = sources if isinstance(sources, dict) else {}
    out = []
    for name, version in versions.items():
        if not version or name in ("vfab-loadtest", "berkeleydb"):
            continue  # the project: the checkout in use; bdb: its extra's
        source = sources.get(name)
        if isinstance(source, dict) and source.get("url"):
            url, commit = str(source["url"]), source.get("commit")
            if url.startswith("file:") or not commit:
                raise ConfigError(
                    f"{side}: {path}: {name} was installed from {url}"
                    f"{'' if commit else ' with no commit recorded'}, "
                    "which cannot be rebuilt"
                )
            out.append(f"{name} @ git+{url}@{commit}")
        else:
            out.append(f"{name}=={version}")
    return tuple(out)


def checkout_code(path: Path) -> dict[str, Any]:
    """A checkout's code: its git commit and a digest of its changes (a
    directory that is no git checkout: a digest of its files)."""
    code = project_code(path)
    if code.get("commit"):
        return code
    h = hashlib.sha256()
    skip = {".git", "__pycache__", "build", "dist", ".tox", ".venv"}
    for root, dirs, files in os.walk(path):
        dirs[:] = sorted(
            d for d in dirs if d not in skip and not d.endswith(".egg-info")
        )
        for name in sorted(files):
            file = Path(root) / name
            h.update(str(file.relative_to(path)).encode())
            with contextlib.suppress(OSError):
                h.update(file.read_bytes())
    return {"commit": None, "dirty": None, "diff": h.hexdigest()[:16]}


def project_requirements(storages: Sequence[str], micro: bool) -> list[str]:
    """This project's requirements, read from the checkout in use's
    setup.cfg: install_requires, the extras *storages* need, and pytest and
    pytest-benchmark when the micro-benchmarks run."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(PROJECT_ROOT / "setup.cfg", encoding="utf-8")

    def lines(section: str, key: str) -> list[str]:
        text = parser.get(section, key, fallback="")
        return [
            ln.split("#", 1)[0].strip()
            for ln in text.splitlines()
            if ln.split("#", 1)[0].strip()
        ]

    out = lines("options", "install_requires")
    if not out:
        raise ConfigError(f"{PROJECT_ROOT}/setup.cfg: no install_requires to build on")
    extras = sorted(
        {
            extra
            for name in storages
            for prefix, extra in STORAGE_EXTRAS.items()
            if name == prefix or name.startswith(prefix + "-")
        }
    )
    for extra in extras:
        out += lines("options.extras_require", extra)
    if micro:
        test = lines("options.extras_require", "test")
        out += [r for r in test if Requirement(r).name in MICRO_EXTRA]
    return out


def uv_binary() -> str:
    """The uv program: on PATH, or the one the uv package ships."""
    found = shutil.which("uv")
    if found:
        return found
    try:
        import uv  # type: ignore[import-not-found,unused-ignore]

        return str(uv.find_uv_bin())
    except (ImportError, FileNotFoundError):
        pass
    raise ConfigError("uv not found: `pip install uv` (./bootstrap installs it)")


def default_cache() -> Path:
    """$VFAB_AB_CACHE, else $XDG_CACHE_HOME/vfab-loadtest/ab (~/.cache)."""
    if os.environ.get("VFAB_AB_CACHE"):
        return Path(os.environ["VFAB_AB_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "vfab-loadtest" / "ab"


def python_identity() -> dict[str, str]:
    """The interpreter every built environment gets: this one's."""
    return {
        "implementation": platform.python_implementation(),
        "version": platform.python_version(),
        "executable": os.path.realpath(sys.executable),
    }


def key_of(spec: EnvSpec, project: Sequence[str]) -> tuple[str, dict[str, Any]]:
    """(key, content): a digest of what the environment contains."""
    content: dict[str, Any] = {
        "format": CACHE_FORMAT,
        "python": python_identity(),
        "project": list(project),
        "kind": spec.kind,
        "requirements": list(spec.requirements),
    }
    if spec.kind == "checkout":
        content["checkout"] = {"path": str(spec.path), **spec.code}
    text = json.dumps(content, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:20], content


def prepare(
    spec: EnvSpec,
    side: str,
    project: Sequence[str],
    cache: Path,
    say: Any = None,
) -> Env:
    """*spec* ready to run: an existing venv as it is; the others built with
    uv under *cache* unless already there.  A failed build leaves nothing
    behind and raises ConfigError (one line, uv's reason)."""
    if spec.kind == "venv":
        assert spec.path is not None
        return Env(spec, spec.path / "bin" / "python")
    key, content = key_of(spec, project)
    root = cache / key
    python = root / "bin" / "python"
    with _locked(cache, key):
        if (root / SPEC_FILE).is_file() and python.exists():
            return Env(spec, python, key, built_now=False)
        if root.exists():
            remove_tree(root)  # an unfinished build of ours
        # Resolved first: what does not resolve is refused before anything
        # is said or made.
        pins = resolve(spec, side, project)
        if say is not None:
            say(f"{side}: building the environment {root} (uv)")
        try:
            _build(side, pins, root)
        except BaseException:
            remove_tree(root)
            raise
        (root / SPEC_FILE).write_text(json.dumps(content, indent=1) + "\n")
    return Env(spec, python, key, built_now=True)


@contextlib.contextmanager
def _locked(cache: Path, key: str) -> Iterator[None]:
    """Two calls building the same environment at once: one builds, the
    other waits and then reuses it."""
    try:
        (cache / ".locks").mkdir(parents=True, exist_ok=True)
        handle = open(cache / ".locks" / key, "w")  # noqa: SIM115
    except OSError as e:
        raise ConfigError(f"environment cache {cache}: {e.strerror or e}") from None
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def resolve(spec: EnvSpec, side: str, project: Sequence[str]) -> str:
    """The environment's requirements resolved to exact versions (uv pip
    compile, for this python): ConfigError when they do not resolve or a
    checkout's package does not build."""
    what = list(project) + list(spec.requirements)
    if spec.kind == "checkout":
        what.append(str(spec.path))
    argv = [uv_binary(), "pip", "compile", "--quiet", "--no-header", "--no-annotate"]
    argv += ["--python", sys.executable, "-"]
    return _uv(side, argv, "\n".join(what) + "\n")


def _build(side: str, pins: str, root: Path) -> None:
    """A virtual environment at *root* holding exactly *pins*."""
    uv = uv_binary()
    _uv(side, [uv, "venv", "--quiet", "--python", sys.executable, str(root)])
    (root / PINS_FILE).write_text(pins)
    python = str(root / "bin" / "python")
    _uv(
        side,
        [
            uv,
            "pip",
            "install",
            "--quiet",
            "--python",
            python,
            "-r",
            str(root / PINS_FILE),
        ],
    )
    frozen = _uv(side, [uv, "pip", "freeze", "--python", python])
    (root / FREEZE_FILE).write_text(frozen)


def _uv(side: str, argv: list[str], stdin: str | None = None) -> str:
    """Run uv; its stdout, or ConfigError with the gist of its stderr."""
    env = dict(os.environ, UV_NO_PROGRESS="1", NO_COLOR="1")
    env.pop("VIRTUAL_ENV", None)
    try:
        done = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=UV_TIMEOUT_S,
            input=stdin if stdin is not None else "",
            env=env,
        )
    except subprocess.TimeoutExpired:
        raise ConfigError(
            f"{side}: uv {argv[1]} took more than {UV_TIMEOUT_S:.0f} s"
        ) from None
    except OSError as e:
        raise ConfigError(f"{side}: cannot run uv: {e.strerror or e}") from None
    if done.returncode != 0:
        raise ConfigError(
            f"{side}: the environment cannot be built: {uv_reason(done.stderr)}"
        )
    return done.stdout


def uv_reason(stderr: str) -> str:
    """uv's error as one line: its first lines without the box drawing."""
    lines = [ln.strip(" ×╰─▶│├┬┴") for ln in stderr.splitlines()]
    lines = [ln for ln in lines if ln and not ln.startswith("help:")]
    text = "; ".join(lines[:3]) or "uv failed without saying why"
    return text if len(text) <= 400 else text[:397] + "..."
