"""The fields of every result format, checked before a file is used.

A file that is valid JSON of the right kind and version may still hold what
no command wrote: a time that is a string, null, 1e400 (which Python reads
as infinity) or NaN; metadata of the wrong type; a result with no samples;
a phase that is a number.  check() walks a parsed file against its format's
schema and raises one ResultsError naming the first field that is wrong
("results[2].samples[0].wall_s: expected seconds (a finite number from 0
to 1e9), got 'fast'"), so that report, report --html and compare print one
line and exit 2 instead of failing deep inside a table or a chart.

A schema is made of these pieces: a Field kind (Text, Seconds, Count,
Number, Whole), Optional(kind) for null, ListOf(kind, at_least), Object(
{key: kind}, required, closed) and MapOf(kind) for objects with any keys,
and ANY for free-form values (a trial's backend counters).  Only the fields
the suite uses are described; metadata keys it does not read may hold
anything.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

from scenarios.results.files import ResultsError
from scenarios.results.formatter import plural

#: The largest count (objects, bytes) and duration a file may hold: a
#: signed 64-bit integer, and about 31 years.
MAX_COUNT = 2**63 - 1
MAX_SECONDS = 1e9


def _describe(value: Any) -> str:
    if (
        isinstance(value, int)
        and not isinstance(value, bool)
        and value.bit_length() > 128
    ):
        return "a number of more than 38 digits"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


class Kind:
    """One kind of value; check() raises ResultsError naming *where*."""

    expected = "a value"

    def check(self, value: Any, where: str) -> None:
        if not self.accepts(value):
            raise ResultsError(
                f"{where}: expected {self.expected}, got {_describe(value)}"
            )

    def accepts(self, value: Any) -> bool:
        return True


ANY = Kind()


@dataclasses.dataclass(frozen=True)
class Field(Kind):
    """A scalar: text, or a number within [low, high] (finite, never a
    boolean), whole if *whole*."""

    expected: str
    text: bool = False
    flag: bool = False
    whole: bool = False
    low: float = -math.inf
    high: float = math.inf

    def accepts(self, value: Any) -> bool:
        if self.text:
            return isinstance(value, str)
        if self.flag:
            return isinstance(value, bool)
        if isinstance(value, bool):
            return False
        if self.whole:
            return isinstance(value, int) and self.low <= value <= self.high
        return (
            isinstance(value, (int, float))
            and math.isfinite(value)
            and self.low <= value <= self.high
        )


Text = Field("text", text=True)
Number = Field("a finite number")
Seconds = Field(
    f"seconds (a finite number from 0 to {MAX_SECONDS:,.0f})", low=0, high=MAX_SECONDS
)
Count = Field("a whole number from 0 to 2**63-1", whole=True, low=0, high=MAX_COUNT)
Positive = Field("a whole number from 1 to 2**63-1", whole=True, low=1, high=MAX_COUNT)
Whole = Field("a whole number", whole=True, low=-MAX_COUNT - 1, high=MAX_COUNT)
Flag = Field("true or false", flag=True)


@dataclasses.dataclass(frozen=True)
class Optional(Kind):
    """*kind*, or null."""

    kind: Kind

    def check(self, value: Any, where: str) -> None:
        if value is not None:
            self.kind.check(value, where)


@dataclasses.dataclass(frozen=True)
class ListOf(Kind):
    """A list of *kind*, at least *at_least* long."""

    kind: Kind
    at_least: int = 0

    def check(self, value: Any, where: str) -> None:
        if not isinstance(value, list):
            raise ResultsError(f"{where}: expected a list, got {_describe(value)}")
        if len(value) < self.at_least:
            got = len(value) or "none"
            raise ResultsError(
                f"{where}: expected at least {plural(self.at_least, 'item')}, got {got}"
            )
        for i, item in enumerate(value):
            self.kind.check(item, f"{where}[{i}]")


@dataclasses.dataclass(frozen=True)
class MapOf(Kind):
    """An object with any keys, each value of *kind*."""

    kind: Kind

    def check(self, value: Any, where: str) -> None:
        if not isinstance(value, dict):
            raise ResultsError(f"{where}: expected an object, got {_describe(value)}")
        for key, item in value.items():
            self.kind.check(item, f"{where}.{key}")


@dataclasses.dataclass(frozen=True)
class Object(Kind):
    """An object whose *fields* are checked when present; *required* ones
    must be; with *closed*, no other key is allowed (the dataclasses a
    record becomes take no others)."""

    fields: Mapping[str, Kind]
    required: tuple[str, ...] = ()
    closed: bool = False

    def check(self, value: Any, where: str) -> None:
        if not isinstance(value, dict):
            raise ResultsError(f"{where}: expected an object, got {_describe(value)}")
        for key in self.required:
            if key not in value:
                raise ResultsError(f"{where}: missing field {key!r}")
        for key, item in value.items():
            kind = self.fields.get(key)
            if kind is None:
                if self.closed:
                    raise ResultsError(f"{where}: unknown field {key!r}")
                continue
            kind.check(item, f"{where}.{key}" if where else key)


# -- metadata: the keys the reports read ------------------------------------

_METADATA_FIELDS: dict[str, Kind] = {
    "date": Text,
    "python": Object({"version": Text, "implementation": Text, "executable": Text}),
    "versions": MapOf(Optional(Text)),
    "host": Object(
        {
            "hostname": Text,
            "platform": Text,
            "machine": Text,
            "cpu_count": Optional(Count),
        }
    ),
    "command": ListOf(Text),
    "rss": Optional(Text),
    "environment": Optional(
        Object(
            {
                "cpu_count": Optional(Count),
                "load_average_start": Optional(ListOf(Number)),
                "load_average_end": Optional(ListOf(Number)),
                "speed_probes_s": Optional(ListOf(Seconds)),
                "warnings": ListOf(Text),
            }
        )
    ),
    "load_average": Optional(ListOf(Number)),
    "load_average_after": Optional(ListOf(Number)),
}


def metadata(config: Mapping[str, Kind]) -> Object:
    """The metadata object, with *config*'s fields for its "config"."""
    return Object({**_METADATA_FIELDS, "config": Object(config)})


_CONFIG_FIELDS: dict[str, Kind] = {
    "statistic": Optional(Text),
    "scale": Optional(Positive),
    "seed": Optional(Whole),
    "options": Object({"cache_size": Optional(Count)}),
}

# -- run --------------------------------------------------------------------

SAMPLE = Object(
    {
        "wall_s": Seconds,
        "cpu_s": Seconds,
        "loads": Optional(Count),
        "stores": Optional(Count),
        "size_before_bytes": Optional(Count),
        "size_after_bytes": Optional(Count),
        "rss_peak_bytes": Optional(Count),
        "cache_hits": Optional(Count),
        "batch_commit_s": Optional(Seconds),
        "gc_s": Optional(Seconds),
    },
    required=("wall_s", "cpu_s"),
    closed=True,
)

PHASE_RESULT = Object(
    {"storage": Text, "size": Text, "phase": Text, "samples": ListOf(SAMPLE, 1)},
    required=("storage", "size", "phase", "samples"),
)

TRIAL = Object(
    {
        "storage": Text,
        "size": Text,
        "objects": Count,
        "batch": Count,
        "batch_commits": Count,
        "size_bytes": Optional(Count),
        "rss_peak_bytes": Optional(Count),
        "stats": MapOf(ANY),
    },
    required=("storage", "size", "objects"),
    closed=True,
)

RUN = Object(
    {
        "metadata": metadata(_CONFIG_FIELDS),
        "results": ListOf(PHASE_RESULT, 1),
        "trials": ListOf(TRIAL),
    },
    required=("results", "trials"),
)

# -- sweep ------------------------------------------------------------------

SWEEP_SAMPLE = Object(
    {
        "wall_s": Seconds,
        "cpu_s": Seconds,
        "stores": Optional(Count),
        "bytes_written": Optional(Count),
    },
    required=("wall_s", "cpu_s"),
    closed=True,
)

SWEEP = Object(
    {
        "metadata": metadata(_CONFIG_FIELDS),
        "results": ListOf(
            Object(
                {
                    "storage": Text,
                    "variant": Text,
                    "objects": Positive,
                    "samples": ListOf(SWEEP_SAMPLE, 1),
                },
                required=("storage", "variant", "objects", "samples"),
            ),
            1,
        ),
    },
    required=("results",),
)

# -- scale ------------------------------------------------------------------

#: The consistency check's JSON (scenarios.load.violations: a report's
#: to_json or not_checked); format 1 wrote checked, ok, summary, problems.
_INVARIANTS = Object(
    {
        "checked": Flag,
        "ok": Optional(Flag),
        "summary": Text,
        "what": Text,
        "counts": MapOf(Count),
        "problems": ListOf(Text),
        "violations": ListOf(MapOf(ANY)),
        "tally": MapOf(Count),
        "seconds": Optional(Seconds),
    },
    required=("checked", "ok", "summary", "problems"),
)

#: A fault's report (scenarios.scale.faults.report).
_FAULT = Object(
    {
        "kind": Text,
        "at_s": Seconds,
        "restart_s": Optional(Seconds),
        "applied_at_s": Optional(Seconds),
        "restarted_at_s": Optional(Seconds),
        "outage_s": Optional(Seconds),
        "first_commit_after_restart_s": Optional(Seconds),
        "first_commit_after_fault_s": Optional(Seconds),
        "errors_before": MapOf(Count),
        "errors_during": MapOf(Count),
        "errors_after": MapOf(Count),
    },
    required=("kind", "applied_at_s", "outage_s"),
)

_SCALE_POINT = Object(
    {
        "storage": Text,
        "clients": Positive,
        "started": Count,
        "window_s": Seconds,
        "rate": Optional(Field("a finite rate above 0", low=0, high=1e9)),
        "hists": MapOf(Text),
        "commits": Count,
        "conflicts": Count,
        "failed": Count,
        "errors": MapOf(Count),
        "backlog": Count,
        "late_s": Seconds,
        "client_cpu_s": Seconds,
        "server_cpu_s": Optional(Seconds),
        "log_records": Count,
        "killed_clients": Count,
        "invariants": _INVARIANTS,
        "fault": Optional(_FAULT),
        "interrupted": Flag,
        "notes": ListOf(Text),
        "arrivals": Count,
        "served": Count,
        "summary": MapOf(Optional(Number)),
        "windows": ListOf(
            Object({"hist": Text, "commits": Count}, required=("hist", "commits"))
        ),
    },
    required=(
        "storage",
        "clients",
        "started",
        "window_s",
        "rate",
        "hists",
        "commits",
        "conflicts",
        "failed",
        "errors",
        "backlog",
        "late_s",
        "client_cpu_s",
        "server_cpu_s",
        "log_records",
        "killed_clients",
        "invariants",
    ),
)

SCALE = Object(
    {
        "metadata": metadata({"seed": Optional(Whole)}),
        "points": ListOf(_SCALE_POINT),
    },
    required=("metadata", "points"),
)


def check(schema: Kind, data: Any, what: str) -> None:
    """Raise ResultsError "malformed WHAT: FIELD: ..." for the first field of
    *data* its *schema* refuses."""
    try:
        schema.check(data, "")
    except ResultsError as e:
        raise ResultsError(f"malformed {what}: {str(e).lstrip(': ')}") from None
