"""What a matrix measures: the benchmarks (zodbshootout's, each with what it
times), the axes and their defaults, the quick preset, and the validated,
frozen MatrixConfig.  Which concurrency kinds a storage can run is asked of
its factory (shared between processes or not, its driver under gevent:
scenarios.clients.concurrency), never of its name."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, ClassVar

import storages
from scenarios.bench.config import check_storage_names
from scenarios.clients import concurrency as scale_concurrency
from scenarios.errors import ConfigError
from scenarios.results import significance
from storages import StorageOptions, options_json
from vfab.codec import Derived


@dataclasses.dataclass(frozen=True)
class Benchmark:
    name: str
    #: zodbshootout's name for the same measurement (its -b option).
    shootout: str
    description: str


#: name -> benchmark, in the order they run and the report's rows.
BENCHMARKS: dict[str, Benchmark] = {
    b.name: b
    for b in (
        Benchmark("add", "add", "add n new objects and commit"),
        Benchmark("update", "update", "change n objects and commit"),
        Benchmark(
            "write-read",
            "warm",
            "open, change n objects, commit, read them back, commit; caches "
            "emptied before",
        ),
        Benchmark(
            "cold",
            "cold",
            "read n objects with the object cache and the storage's cache emptied",
        ),
        Benchmark(
            "warm",
            "hot",
            "read n objects with the object cache emptied, the storage's cache full",
        ),
        Benchmark("hot", "steamin", "read n objects already in the object cache"),
        Benchmark(
            "conflicts",
            "conflicts",
            "update objects every client shares (conflicts resolved) and commit",
        ),
    )
}

DEFAULT_STORAGES: tuple[str, ...] = ("file", "zeo", "relstorage-sqlite")
DEFAULT_CONCURRENCY: tuple[int, ...] = (1, 5, 20)
DEFAULT_OBJECTS: tuple[int, ...] = (1, 10, 100)
#: The FAQ's kinds: threads of one process, or separate processes.
DEFAULT_KINDS: tuple[str, ...] = ("threads", "processes")
DEFAULT_ROUNDS = 5
DEFAULT_TRANSACTIONS = 2

#: --quick: the four benchmarks the FAQ's claims rest on, the ends of each
#: axis (the published exception, 20 threads x 100 objects, included).
QUICK_BENCHMARKS: tuple[str, ...] = ("add", "update", "write-read", "cold")
QUICK_CONCURRENCY: tuple[int, ...] = (1, 20)
QUICK_OBJECTS: tuple[int, ...] = (1, 100)
QUICK_ROUNDS = 3
QUICK_TRANSACTIONS = 2

MAX_CONCURRENCY = 200
MAX_OBJECTS = 100_000
MAX_ROUNDS = 1_000
MAX_TRANSACTIONS = 1_000


@dataclasses.dataclass(frozen=True)
class MatrixConfig(Derived):
    """What a matrix measures; validated here, recorded in its metadata.

    *kinds_named*: the user named the kinds (--kind): a storage that cannot
    run one of them is refused, one line; by default such cells are left
    out, said.
    """

    storages: tuple[str, ...] = DEFAULT_STORAGES
    concurrency: tuple[int, ...] = DEFAULT_CONCURRENCY
    kinds: tuple[str, ...] = DEFAULT_KINDS
    objects: tuple[int, ...] = DEFAULT_OBJECTS
    benchmarks: tuple[str, ...] = tuple(BENCHMARKS)
    rounds: int = DEFAULT_ROUNDS
    transactions: int = DEFAULT_TRANSACTIONS
    statistic: str = significance.DEFAULT_STATISTIC
    quick: bool = False
    kinds_named: bool = False
    options: StorageOptions = StorageOptions()

    #: Its JSON (codec.derived): every registered option group's options,
    #: not whether the kinds were named.
    JSON_SKIP: ClassVar[tuple[str, ...]] = ("kinds_named",)
    JSON_AS: ClassVar[dict[str, Callable[[Any], Any]]] = {"options": options_json}

    def __post_init__(self) -> None:
        check_commits(self.storages, self.options, "the matrix")
        _distinct("benchmark", self.benchmarks, BENCHMARKS)
        _distinct("--kind", self.kinds, scale_concurrency.KINDS)
        _counts("--concurrency", self.concurrency, MAX_CONCURRENCY)
        _counts("--objects", self.objects, MAX_OBJECTS)
        if not 1 <= self.rounds <= MAX_ROUNDS:
            raise ConfigError(f"--rounds: 1 to {MAX_ROUNDS}, not {self.rounds}")
        if not 1 <= self.transactions <= MAX_TRANSACTIONS:
            raise ConfigError(
                f"--transactions: 1 to {MAX_TRANSACTIONS}, not {self.transactions}"
            )
        if self.statistic not in significance.STATISTICS:
            raise ConfigError(f"unknown statistic {self.statistic!r}")


def check_commits(names: tuple[str, ...], options: StorageOptions, who: str) -> None:
    """ConfigError for a name not registered, or a storage that commits
    nothing (*who* measures commits: "the matrix", "sweep")."""
    check_storage_names(names, options)
    for name in names:
        if not storages.factory_class(name, options).has_database:
            raise ConfigError(
                f"storage {name!r} commits nothing; {who} measures commits"
            )


def _distinct(what: str, names: tuple[str, ...], known: Any) -> None:
    if not names:
        raise ConfigError(f"{what}: none named")
    if len(set(names)) != len(names):
        raise ConfigError(f"{what}: a name is given twice")
    for name in names:
        if name not in known:
            raise ConfigError(
                f"{what}: unknown {name!r}; choose from {', '.join(known)}"
            )


def _counts(what: str, values: tuple[int, ...], most: int) -> None:
    if not values:
        raise ConfigError(f"{what}: no value given")
    if len(set(values)) != len(values):
        raise ConfigError(f"{what}: a value is given twice")
    for v in values:
        if not 1 <= v <= most:
            raise ConfigError(f"{what}: 1 to {most:,}, not {v}")


def kind_refusal(factory: storages.StorageFactory, kind: str) -> str | None:
    """Why *factory*'s storage cannot run the matrix's clients as *kind*
    (None: it can).  A storage no second process can open runs its clients
    as threads of one process; greenlets need a client that yields to
    gevent (ZEO's, RelStorage with a cooperative driver)."""
    if not factory.shared:
        if kind == "processes":
            return (
                f"{factory.name} is opened by one process at a time: its clients "
                "run as threads of one process (--kind threads)"
            )
        if kind == "greenlets":
            return f"{factory.name} is not known to yield to gevent"
        return None
    if kind == "greenlets":
        return scale_concurrency.greenlet_refusal(
            scale_concurrency.factory_driver(factory)
        )
    return None


def parse_counts(text: str) -> tuple[int, ...]:
    """'1,5,20' -> (1, 5, 20); ValueError in one line otherwise."""
    out = []
    for part in text.split(","):
        part = part.strip().replace("_", "")
        if not part:
            continue
        if not part.isdigit():
            raise ValueError(f"not a whole number: {part[:20]!r}")
        out.append(int(part))
    if not out:
        raise ValueError("no number given")
    return tuple(out)


def parse_names(text: str) -> tuple[str, ...]:
    return tuple(n.strip() for n in text.split(",") if n.strip())
