"""A release directory read back: release.json and every part's files.

load() checks the whole directory before anything is compared or written:
not a release, from a newer vfab-loadtest, or damaged is one ResultsError
line naming the directory.  identity() is what two releases must share.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from scenarios.ab import model as ab
from scenarios.ab.model import ABRun
from scenarios.counts.compare import benchmark_cells
from scenarios.counts.model import Cell, CountRun
from scenarios.results import environment
from scenarios.results.files import RELEASE, ResultsError, read_json
from scenarios.results.kinds import RELEASE_SUMMARY, Found, sniff
from scenarios.results.model import RunResult
from scenarios.scale.model import ScaleRun

SUMMARY = RELEASE_SUMMARY

#: File names of the parts' JSON, as release writes them.
TABLE, COUNTS, MICRO_COUNTS = "table.json", "counts.json", "counts-micro.json"
MICRO, SCALE, MILLION = "micro.json", "scale.json", "million.json"
#: The wall time measured together with the last release (release/paired).
PAIRED = "ab.json"


@dataclasses.dataclass(frozen=True)
class Release:
    """One release directory, every part that ran read (None: not run, or
    not in a release of that format)."""

    path: Path
    summary: dict[str, Any]
    table: RunResult | None = None
    counts: CountRun | None = None
    micro_counts: dict[tuple[str, str], Cell] | None = None
    micro: dict[str, Any] | None = None
    scale: ScaleRun | None = None
    million: RunResult | None = None
    paired: ABRun | None = None

    @property
    def metadata(self) -> dict[str, Any]:
        meta = self.summary.get("metadata")
        return meta if isinstance(meta, dict) else {}

    @property
    def storages(self) -> tuple[str, ...]:
        return tuple(self.metadata.get("storages") or ())

    @property
    def date(self) -> str:
        return str(self.metadata.get("date") or "")

    def version(self, package: str = "ZODB") -> str | None:
        versions = self.metadata.get("versions") or {}
        value = versions.get(package)
        return str(value) if value else None

    @property
    def label(self) -> str:
        """ "results/release-6.4 (2026-11-26, ZODB 6.4)"."""
        zodb = self.version()
        when = self.date[:10] or "no date"
        return f"{self.path} ({when}{f', ZODB {zodb}' if zodb else ''})"

    @property
    def load(self) -> float | None:
        """The highest 1-minute load average the release recorded (at its
        start or end, or a part's), or None."""
        envs = [environment.of(self.metadata)]
        for run in (self.table, self.scale, self.million):
            if run is not None:
                envs.append(environment.of(run.metadata))
        loads = [
            loads[0]
            for env in envs
            for when in ("start", "end")
            if isinstance(loads := env.get(f"load_average_{when}"), list) and loads
            if isinstance(loads[0], (int, float)) and not isinstance(loads[0], bool)
        ]
        return max(loads) if loads else None

    @property
    def busy_load(self) -> float | None:
        """The load at which the release ran when that is busy (above
        environment.BUSY_LOAD_PER_CPU a CPU), else None."""
        load = self.load
        cpus = self.metadata.get("cpu_count") or environment.of(self.metadata).get(
            "cpu_count"
        )
        if load is None or not isinstance(cpus, int) or cpus < 1:
            return None
        return load if load / cpus > environment.BUSY_LOAD_PER_CPU else None

    @property
    def code(self) -> str:
        """The project's commit it measured, short, "+patch DIGEST" when its
        tree differed from it; "?" when not recorded (metadata "code")."""
        code = self.metadata.get("code")
        project = code.get("project") if isinstance(code, dict) else None
        if not isinstance(project, dict) or not isinstance(project.get("commit"), str):
            return "?"
        text = project["commit"][:10]
        if project.get("dirty"):
            text += f"+patch {project.get('diff') or '?'}"
        return text

    def part(self, name: str) -> dict[str, Any] | None:
        for p in self.summary.get("parts") or ():
            if isinstance(p, dict) and p.get("name") == name:
                return p
        return None

    def status(self, name: str) -> str:
        part = self.part(name)
        return str(part.get("status")) if part else "not run"


def summary(found: Found) -> dict[str, Any]:
    """The release.json of the directory sniff() *found*, checked and
    migrated; ResultsError naming the directory otherwise."""
    path, data = found.path, found.data
    if found.kind != "release" or not path.is_dir():
        raise ResultsError(
            f"{path} is not a release directory (no {SUMMARY}: "
            "vfab-bench release --out writes one)"
        )
    if not isinstance(data, dict) or data.get("kind") != "release":
        kind = data.get("kind") if isinstance(data, dict) else None
        raise ResultsError(
            f"{path} is not a release directory ({SUMMARY} is of kind {kind!r})"
        )
    # Written before the format had a version: version 0.
    data.setdefault("schema_version", 0)
    version = data["schema_version"]
    if isinstance(version, int) and version > RELEASE.version:
        raise ResultsError(
            f"{path} was written by a newer vfab-loadtest (release format "
            f"{version}; this one reads up to {RELEASE.version})"
        )
    try:
        data = RELEASE.migrate(data)
    except ResultsError as e:
        raise ResultsError(f"{path}/{SUMMARY}: {e}") from None
    parts = data.get("parts")
    meta = data.get("metadata")
    if (
        not isinstance(parts, list)
        or not all(
            isinstance(p, dict) and isinstance(p.get("name"), str) for p in parts
        )
        or not isinstance(meta, dict)
        or not isinstance(meta.get("storages"), list)
    ):
        raise ResultsError(f"{path} is damaged: {SUMMARY} lacks its parts or storages")
    if not meta["storages"] or not all(
        isinstance(n, str) and n for n in meta["storages"]
    ):
        raise ResultsError(
            f"{path} is damaged: {SUMMARY}'s metadata.storages is not a list of names"
        )
    for p in parts:
        files = p.get("files", [])
        if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
            raise ResultsError(
                f"{path} is damaged: {SUMMARY}'s part {p['name']!r} lists its "
                "files as something other than a list of names"
            )
        if not isinstance(p.get("status", ""), str):
            raise ResultsError(
                f"{path} is damaged: {SUMMARY}'s part {p['name']!r} has no status"
            )
    return data


def check_parts(release: Release) -> None:
    """ResultsError where what a release's files say contradicts itself or
    the suite: a storage counted as talking to a server that has none, a
    scale point whose check says right while listing violations, a part
    that says it ran but wrote nothing to read."""
    import storages

    path = release.path
    if release.counts is not None:
        served = release.counts.metadata.get("counts", {}).get("served", [])
        for name in served:
            if name in storages.REGISTRY and not storages.get(name).starts_server:
                raise ResultsError(
                    f"{path} is damaged: counts.json says {name} talks to a "
                    f"server; {name} has none"
                )
    if release.scale is not None:
        for p in release.scale.every_point:
            found = p.check.found
            if p.check.ok is True and (found or not p.check.checked):
                raise ResultsError(
                    f"{path} is damaged: scale.json's {p.storage} point at "
                    f"{p.clients} clients says right "
                    + ("while listing violations" if found else "but was not checked")
                )
    for name, attr in (("counts", "counts"), ("scale", "scale"), ("table", "table")):
        part = release.part(name)
        if part and part.get("status") == "ok" and getattr(release, attr) is None:
            raise ResultsError(
                f"{path} is damaged: {SUMMARY} says its {name} part ran, and "
                "lists no file of it"
            )


def _listed(summary: dict[str, Any]) -> set[str]:
    """Every file the parts say they wrote."""
    return {
        str(f)
        for p in summary.get("parts") or ()
        for f in (p.get("files") or ())
        if isinstance(f, str)
    }


def load(path: Path, checked: dict[str, Any] | None = None) -> Release:
    """The release at *path*, every JSON file its parts list read and
    checked; ResultsError in one line otherwise.  *checked*: its summary,
    when release has just written the directory (before its release.json,
    which then holds the verdict)."""
    if checked is None:
        if not path.is_dir():
            what = "does not exist" if not path.exists() else "is not a directory"
            raise ResultsError(f"{path} {what}: name a release directory")
        checked = summary(sniff(path))
    listed = _listed(checked)
    found: dict[str, Any] = {}
    readers = {
        TABLE: RunResult.load,
        MILLION: RunResult.load,
        SCALE: ScaleRun.load,
        COUNTS: CountRun.load,
    }
    for name in (TABLE, MILLION, SCALE, COUNTS, MICRO_COUNTS, MICRO, PAIRED):
        if name not in listed:
            continue
        file = path / name
        if not file.is_file():
            raise ResultsError(f"{path} is damaged: {name} is missing")
        try:
            if name in readers:
                found[name] = readers[name](file)
            elif name == PAIRED:
                found[name] = paired_run(file)
            elif name == MICRO_COUNTS:
                found[name] = benchmark_cells(read_json(file), str(file))
            else:
                data = read_json(file)
                if not isinstance(data, dict) or not isinstance(
                    data.get("benchmarks"), list
                ):
                    raise ResultsError(f"{file}: not pytest-benchmark's JSON")
                found[name] = data
        except ResultsError as e:
            text = str(e)
            raise ResultsError(
                f"{path} is damaged: {text if str(file) in text else f'{name}: {text}'}"
            ) from None
    release = Release(
        path,
        checked,
        table=found.get(TABLE),
        counts=found.get(COUNTS),
        micro_counts=found.get(MICRO_COUNTS),
        micro=found.get(MICRO),
        scale=found.get(SCALE),
        million=found.get(MILLION),
        paired=found.get(PAIRED),
    )
    check_parts(release)
    return release


def paired_run(path: Path) -> ABRun:
    """The paired run a release wrote; ResultsError when it is not one."""
    data = read_json(path)
    if not isinstance(data, dict) or data.get("kind") != ab.KIND:
        raise ResultsError(f"{path}: not the JSON of vfab-bench ab")
    version = data.get("version")
    if not isinstance(version, int) or version > ab.VERSION:
        raise ResultsError(
            f"{path}: ab format {version!r}, this one reads {ab.VERSION}"
        )
    try:
        return ABRun.from_json(data)
    except (KeyError, TypeError, ValueError) as e:
        raise ResultsError(f"{path}: damaged ({e})") from None


def _config(run: RunResult | None) -> dict[str, Any]:
    if run is None:
        return {}
    config = run.metadata.get("config")
    return config if isinstance(config, dict) else {}


def identity(release: Release) -> dict[str, Any]:
    """What two releases must share to be compared."""
    table, million = _config(release.table), _config(release.million)
    return {
        "storages": sorted(release.storages),
        "quick": bool(release.metadata.get("quick")),
        "scale": table.get("scale"),
        "seed": table.get("seed"),
        "million": million.get("scale"),
    }


#: identity() key -> what differs, in words.
MEANINGS = {
    "storages": "another storage set",
    "quick": "--quick against a full release",
    "scale": "another data set size",
    "seed": "another data generator seed",
    "million": "another size for the million run",
}


def check_comparable(old: dict[str, Any], new: dict[str, Any], name: str) -> None:
    """ResultsError naming how release *name* (identity *old*) differs from
    *new*; a part one of them did not run (None) is left out, not refused."""
    for key, meaning in MEANINGS.items():
        a, b = old.get(key), new.get(key)
        if a is None or b is None:
            continue
        if a != b:
            shown = {
                "storages": lambda v: ", ".join(v) or "none",
                "quick": lambda v: "--quick" if v else "full",
            }.get(key, str)
            raise ResultsError(
                f"{name} is a release of {meaning} ({shown(a)}; this one: "
                f"{shown(b)}): compare releases made alike"
            )
