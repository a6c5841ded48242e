"""A result file checked before it is used: check() names the first field
no command wrote ("results[2].samples[0].wall_s: expected seconds..."), so
views print one line and exit 2 instead of failing deep inside a table
(or in a library: pyperf, HdrHistogram).  A format's schema is derived
from its model's dataclasses (of()): a field's kind from its type, and
from its name where the type does not say all (NAMED: a storage name, an
encoded histogram; *_s: seconds); only the fields the suite reads are
described, the metadata's others are free.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from scenarios.results.files import Format, ResultsError, load
from scenarios.results.formatter import plural
from vfab.codec import Json, build, encode, json_key

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
        if isinstance(value, int):  # any size: compared exactly, never a float
            return self.low <= value <= self.high
        if self.whole:
            return False
        return (
            isinstance(value, float)
            and math.isfinite(value)
            and self.low <= value <= self.high
        )


@dataclasses.dataclass(frozen=True)
class Line(Kind):
    """Text on one line (what a library or a table takes as one: pyperf's
    metadata, a column's header), not blank if *name*."""

    expected: str = "text on one line"
    name: bool = False

    def accepts(self, value: Any) -> bool:
        if not isinstance(value, str) or value.splitlines() not in ([value], []):
            return False
        return bool(value.strip()) or not self.name


@dataclasses.dataclass(frozen=True)
class Histogram(Kind):
    """An encoded HdrHistogram (base64 of its compressed form; "" for none)
    whose values fit in *highest* (what the reader adds it into)."""

    highest: int
    expected: str = "an encoded HdrHistogram"

    def accepts(self, value: Any) -> bool:
        if not isinstance(value, str):
            return False
        if not value:
            return True
        from hdrh.histogram import HdrHistogram

        try:
            decoded = HdrHistogram.decode(value.encode("ascii"))
        # Bytes from a file: base64, zlib and the codec's own errors, or
        # whatever else the library meets in them.
        except Exception:  # noqa: BLE001
            return False
        return bool(decoded.get_max_value() <= self.highest)


Text = Field("text", text=True)
Number = Field("a finite number")
Seconds = Field(
    f"seconds (a finite number from 0 to {MAX_SECONDS:,.0f})", low=0, high=MAX_SECONDS
)
Count = Field("a whole number from 0 to 2**63-1", whole=True, low=0, high=MAX_COUNT)
Positive = Field("a whole number from 1 to 2**63-1", whole=True, low=1, high=MAX_COUNT)
Whole = Field("a whole number", whole=True, low=-MAX_COUNT - 1, high=MAX_COUNT)
Flag = Field("true or false", flag=True)
OneLine = Line()
#: A storage's, a phase's or a size's name: a column or a row of a table,
#: a pyperf benchmark's name.
Name = Line("a name: text on one line, not blank", name=True)
#: A latency histogram of a scale run: microseconds, up to an hour.
Latencies = Histogram(3_600_000_000, "an encoded HdrHistogram of microseconds")

#: Fields whose kind their name says, where their type (str) does not.
NAMED: dict[str, Kind] = {
    "storage": Name,
    "phase": Name,
    "size": Name,
    "hist": Latencies,
    "hists": Latencies,
}


@dataclasses.dataclass(frozen=True)
class Optional(Kind):
    """*kind*, or null."""

    kind: Kind

    def check(self, value: Any, where: str) -> None:
        if value is not None:
            self.kind.check(value, where)


@dataclasses.dataclass(frozen=True)
class ListOf(Kind):
    """A list of *kind*, at least *at_least* long; with *unique*, no two
    of its objects alike in those fields (a row found by them)."""

    kind: Kind
    at_least: int = 0
    unique: tuple[str, ...] = ()

    def check(self, value: Any, where: str) -> None:
        if not isinstance(value, list):
            raise ResultsError(f"{where}: expected a list, got {_describe(value)}")
        if len(value) < self.at_least:
            got = len(value) or "none"
            raise ResultsError(
                f"{where}: expected at least {plural(self.at_least, 'item')}, got {got}"
            )
        seen: dict[tuple[Any, ...], int] = {}
        for i, item in enumerate(value):
            self.kind.check(item, f"{where}[{i}]")
            if self.unique:
                key = tuple(repr(item.get(k)) for k in self.unique)
                if key in seen:
                    fields = ", ".join(f"{k} {item.get(k)!r}" for k in self.unique)
                    raise ResultsError(
                        f"{where}[{i}]: {fields} listed twice "
                        f"(also {where}[{seen[key]}])"
                    )
                seen[key] = i


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

# The one-line ones are a pyperf suite's metadata too (--pyperf).
_METADATA_FIELDS: dict[str, Kind] = {
    "date": OneLine,
    "python": Object(
        {"version": OneLine, "implementation": OneLine, "executable": Text}
    ),
    "versions": MapOf(Optional(OneLine)),
    "host": Object(
        {
            "hostname": OneLine,
            "platform": OneLine,
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


#: The run configuration's keys the views read (run and sweep files).
CONFIG: dict[str, Kind] = {
    "statistic": Optional(Text),
    "scale": Optional(Positive),
    "seed": Optional(Whole),
    "options": Object({"cache_size": Optional(Count)}),
}

# -- the schema of a dataclass ----------------------------------------------


def of(
    cls: type,
    closed: bool = False,
    required: tuple[str, ...] | None = None,
    **fields: Kind,
) -> Object:
    """The schema of the JSON of dataclass *cls*: a field's kind from its
    type (kind_of), or the one *fields* names (also keys the JSON has that
    the class does not keep); *required*: by default the fields without a
    default; *closed*: no other key (the class takes no other)."""
    hints = typing.get_type_hints(cls)
    own = dataclasses.fields(cls)
    kinds = {
        json_key(f): fields.get(json_key(f)) or kind_of(hints[f.name], json_key(f))
        for f in own
    }
    if required is None:
        required = tuple(
            json_key(f)
            for f in own
            if f.default is dataclasses.MISSING
            and f.default_factory is dataclasses.MISSING
        )
    return Object({**fields, **kinds}, required, closed)


def kind_of(hint: Any, name: str = "") -> Kind:
    """The kind of a value of type *hint*: text (its kind by its name, for
    those NAMED), a count (int), seconds (a float named *_s) or a number,
    true or false; X | None, tuple[X, ...],
    list[X], dict[str, X]; a dataclass as of() gives it; Any: anything."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType) and type(None) in args:
        (inner,) = (a for a in args if a is not type(None))
        return Optional(kind_of(inner, name))
    if origin in (tuple, list):
        return ListOf(kind_of(args[0], name))
    if origin is dict:
        return MapOf(kind_of(args[1], name))
    if dataclasses.is_dataclass(hint):
        return of(hint)  # type: ignore[arg-type]
    if hint is str and name in NAMED:
        return NAMED[name]
    simple = {str: Text, bool: Flag, int: Count, Any: ANY}
    if hint is float:
        return Seconds if name.endswith("_s") else Number
    return simple[hint]


S = TypeVar("S", bound="Stored")


class Stored(Json):
    """A result dataclass kept as a versioned JSON file: its FORMAT
    (files.py), the words an error names it with, and its schema, derived
    from its fields (a class whose types do not say all overrides
    schema())."""

    FORMAT: ClassVar[Format]
    WHAT: ClassVar[str]

    @classmethod
    def schema(cls) -> Object:
        return of(cls)

    def to_json(self) -> dict[str, Any]:
        return {**self.FORMAT.header(), **encode(self)}

    @classmethod
    def from_json(cls: type[S], data: Any) -> S:
        data = cls.FORMAT.migrate(data)
        check(cls.schema(), data, cls.WHAT)
        return build(cls, data)

    @classmethod
    def load(cls: type[S], path: Path) -> S:
        """The file at *path*; ResultsError naming it (and the field)."""
        return load(path, cls.from_json)


def check(schema: Kind, data: Any, what: str) -> None:
    """Raise ResultsError "malformed WHAT: FIELD: ..." for the first field of
    *data* its *schema* refuses."""
    try:
        schema.check(data, "")
    except ResultsError as e:
        raise ResultsError(f"malformed {what}: {str(e).lstrip(': ')}") from None
