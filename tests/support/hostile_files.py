"""The files tests/support/hostile.py's cases start from, made once per probe
(make_bases) or each when a test first asks for it (Bases), by
the checkout's own commands (result files of run, scale, run --counts,
verify, run --pyperf, pytest-benchmark's micro suite; data sets written by
populate), databases another program wrote (a FileStorage, a zlib one, a
BDBStorage and a history-free RelStorage on SQLite with no vfab data set),
and the malformed result files derived from the real ones.
"""

from __future__ import annotations

import copy
import json
import random
import shutil
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from tests.support.hostile_proc import HELPER_VAR, Checkout, run_to_end

#: A program that is not the suite writes a database of its own (run with
#: the checkout's python: its ZODB, zc.zlibstorage, RelStorage, BDBStorage).
FOREIGN = """
import sys, ZODB
from ZODB.FileStorage import FileStorage
kind, path = sys.argv[1:3]
if kind == "file":
    storage = FileStorage(path)
elif kind == "zlib":
    from zc.zlibstorage import ZlibStorage
    storage = ZlibStorage(FileStorage(path))
elif kind == "bdb":
    from storages.bdb.storage import BDBStorage
    storage = BDBStorage(path)
else:
    import os
    from relstorage.options import Options
    from relstorage.adapters.sqlite.adapter import Sqlite3Adapter
    from relstorage.storage import RelStorage
    os.makedirs(path)
    options = Options(keep_history=False)
    storage = RelStorage(Sqlite3Adapter(path, {}, options=options), options=options)
db = ZODB.DB(storage)
with db.transaction() as connection:
    connection.root()["customers"] = {"ada": 1, "grace": 2}
db.close()
"""

QUICK = ["--preset", "quick", "-q"]


#: The result files the checkout's own commands make: name -> vfab-bench's
#: arguments ({out}: the file).
COMMANDS: dict[str, tuple[str, ...]] = {
    "run.json": ("run", "--storage", "mapping,memory", *QUICK, "--json", "{out}"),
    "scale.json": (
        *("scale", "--storage", "zeo", "--clients", "1", "--duration", "1"),
        *("--warmup", "0", "-q", "--json", "{out}"),
    ),
    "counts.json": (
        *("run", "--counts", "--storage", "memory", "--rows", "2000"),
        *("--repeat", "1", "--warmups", "0", "-q", "--json", "{out}"),
    ),
    "verify.json": (
        *("verify", "--storage", "zeo", "--clients", "1", "--budget", "2"),
        *("--no-scenarios", "-q", "--json", "{out}"),
    ),
    "pyperf.json": ("run", "--storage", "mapping", *QUICK, "--pyperf", "{out}"),
    "file": ("populate", "-q", "--storage", "file", "--path", "{out}"),
    "bdb": ("populate", "-q", "--storage", "bdb", "--path", "{out}"),
}

#: Databases another program wrote: name -> (FOREIGN's kind, the leaf).
FOREIGN_BASES = {
    "foreign-file": ("file", "Data.fs"),
    "foreign-zlib": ("zlib", "Data.fs"),
    "foreign-bdb": ("bdb", "bdb"),
    "foreign-sqlite": ("sqlite", "relstorage"),
}


class Bases(Mapping[str, Path]):
    """Every base file and data set by name, under *directory*, each made
    the first time it is asked for (and what it derives from before it):
    a test that needs two makes two."""

    def __init__(self, checkout: Checkout, directory: Path) -> None:
        self.checkout, self.directory = checkout, directory
        self.tmp = directory / "tmpdir"  # not .../tmp: see hostile_work.Work
        self.tmp.mkdir(parents=True, exist_ok=True)
        self.env = checkout.env(HELPER_VAR, "bases", self.tmp)
        self.made: dict[str, Path] = {}

    def names(self) -> list[str]:
        return [
            *COMMANDS,
            "micro.json",
            *FOREIGN_BASES,
            *MALFORMED,
            "big-old.json",
            "big-new.json",
            "deep.json",
        ]

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    def __getitem__(self, name: str) -> Path:
        if name not in self.made:
            if name not in self.names():
                raise KeyError(name)
            self.made[name] = self._make(name)
        return self.made[name]

    def _make(self, name: str) -> Path:
        directory, checkout = self.directory, self.checkout
        target = directory / name
        if name in COMMANDS:
            args = [a.format(out=target) for a in COMMANDS[name]]
            run_to_end(checkout.cli(*args), self.env, directory)
        elif name == "micro.json":  # pytest-benchmark's, as release's micro part
            run_to_end(
                [
                    *(checkout.python, "-m", "pytest", "-p", "no:cacheprovider"),
                    "-q",
                    str(checkout.root / "tests" / "benchmarks" / "test_micro.py"),
                    *("--benchmark-only", f"--benchmark-json={target}"),
                    *("--benchmark-min-rounds=1", "--benchmark-max-time=0.005"),
                    *("--storage", "mapping", "-k", "new_oid"),
                ],
                self.env,
                checkout.root,
            )
        elif name in FOREIGN_BASES:
            kind, leaf = FOREIGN_BASES[name]
            target.mkdir()
            argv = [checkout.python, "-c", FOREIGN, kind, str(target / leaf)]
            run_to_end(argv, self.env, directory)
            for scratch in [*target.glob("*.tmp"), *target.glob("*.lock")]:
                scratch.unlink()
        elif name in MALFORMED:
            source, change = MALFORMED[name]
            target.write_text(change(_load(self[source])))
        elif name in ("big-old.json", "big-new.json"):
            old, new = many_trials(_load(self["run.json"]))
            (directory / "big-old.json").write_text(json.dumps(old))
            (directory / "big-new.json").write_text(json.dumps(new))
        else:
            target.write_text("[" * 100_000 + "]" * 100_000)  # deep.json
        return target


def make_bases(checkout: Checkout, directory: Path) -> dict[str, Path]:
    """Every base file and data set, by name, under *directory*."""
    bases = Bases(checkout, directory)
    made = {name: bases[name] for name in bases}
    shutil.rmtree(bases.tmp, ignore_errors=True)
    return made


def _load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


# -- malformed files: a real file, altered --------------------------------------------


def _hist(value: str) -> Callable[[dict[str, Any]], str]:
    def change(scale: dict[str, Any]) -> str:
        scale["points"][0]["hists"]["browse"] = value
        return json.dumps(scale)

    return change


def _huge_time(run: dict[str, Any]) -> str:
    """A sample's wall time of 10**400 seconds: an integer JSON parses, too
    large for a float."""
    run["results"][0]["samples"][0]["wall_s"] = "HUGE"
    return json.dumps(run).replace('"HUGE"', "1" + "0" * 400, 1)


def _schema_true(run: dict[str, Any]) -> str:
    run["schema_version"] = True  # True == 1 in Python
    return json.dumps(run)


def _negative_instructions(counts: dict[str, Any]) -> str:
    counts["results"][0]["samples"][0]["instructions"] = -5
    return json.dumps(counts)


def _result_twice(run: dict[str, Any]) -> str:
    run["results"].append(copy.deepcopy(run["results"][0]))
    return json.dumps(run)


def _storage_named(name: str) -> Callable[[dict[str, Any]], str]:
    """Storage 'mapping' renamed *name* everywhere in a run file (JSON's
    \\u escapes keep a lone surrogate as it is)."""

    def change(run: dict[str, Any]) -> str:
        for row in run["results"] + run["trials"]:
            if row["storage"] == "mapping":
                row["storage"] = name
        config = run["metadata"]["config"]
        config["storages"] = [name if s == "mapping" else s for s in config["storages"]]
        return json.dumps(run)

    return change


ESCAPES = "map\x1b]0;pwned\x07\x1b[2J\x1b[31mping"

MALFORMED: dict[str, tuple[str, Callable[[dict[str, Any]], str]]] = {
    "hist-not-base64.json": ("scale.json", _hist("not base64 !!!")),
    "hist-not-hdr.json": ("scale.json", _hist("SGVsbG8gd29ybGQ=")),
    "time-10e400.json": ("run.json", _huge_time),
    "schema-true.json": ("run.json", _schema_true),
    "counts-negative.json": ("counts.json", _negative_instructions),
    "result-twice.json": ("run.json", _result_twice),
    "storage-empty.json": ("run.json", _storage_named("")),
    "storage-lines.json": ("run.json", _storage_named("map\nping")),
    "storage-escapes.json": ("run.json", _storage_named(ESCAPES)),
    "storage-surrogate.json": ("run.json", _storage_named("map\udc80ping")),
}


def many_trials(run: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Two runs of 3 cells with 10,000 trials each (run's --repeat maximum),
    the second 1% slower."""
    rng = random.Random(2000)

    def one(shift: float) -> dict[str, Any]:
        out = copy.deepcopy(run)
        out["metadata"]["config"]["storages"] = ["mapping"]
        out["metadata"]["config"]["repeat"] = 10_000
        out["trials"] = [t for t in out["trials"] if t["storage"] == "mapping"]
        cells = [r for r in out["results"] if r["storage"] == "mapping"][:3]
        for cell in cells:
            first = cell["samples"][0]
            cell["samples"] = [
                dict(
                    first,
                    wall_s=first["wall_s"] * (1 + shift + rng.random() / 10),
                    cpu_s=first["cpu_s"] * (1 + shift + rng.random() / 10),
                )
                for _ in range(10_000)
            ]
        out["results"] = cells
        return out

    return one(0.0), one(0.01)
