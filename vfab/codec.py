"""JSON derived from a dataclass's fields, as schema.of derives the schema:
encode() writes a field under its name (or the key its metadata gives:
json_key), a nested dataclass as an object, a value with its own to_json
through it (a compact record: a NamedTuple as a short list), tuples and
lists as lists, dicts as objects, None as null; build() reads it back as
the field types say (through a type's own from_json where it has one).
Json gives a class to_json and from_json so (JSON_ORDER: keys a format
puts first), Derived a view its to_json (derived()); a class whose file
shape is deliberately other than its fields (a compact list, keys derived
at write time) writes its own.
"""

from __future__ import annotations

import dataclasses
import inspect
import types
import typing
from typing import Any, TypeVar

T = TypeVar("T")
J = TypeVar("J", bound="Json")

#: The metadata key of a field whose JSON key is not its name.
KEY = "json"


def json_key(field: dataclasses.Field[Any]) -> str:
    """The key *field* has in JSON: its name, or the one its metadata gives."""
    return str(field.metadata.get(KEY, field.name))


def encode(obj: Any) -> Any:
    """A dataclass (and what it holds) as JSON values: objects, lists."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {
            json_key(f): _encode(getattr(obj, f.name)) for f in dataclasses.fields(obj)
        }
    return _encode(obj)


def _encode(value: Any) -> Any:
    own = None if isinstance(value, type) else getattr(value, "to_json", None)
    if own is not None:
        return own()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return encode(value)
    if isinstance(value, (tuple, list)):
        return [_encode(v) for v in value]
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    return value


def build(cls: type[T], data: typing.Mapping[str, Any]) -> T:
    """An instance of dataclass *cls* from JSON *data* its schema (schema.of)
    accepted: tuples, lists, dicts and nested dataclasses built as the
    types say; a field absent takes its default; keys the class does not
    keep are left out."""
    hints = typing.get_type_hints(cls)
    values = {
        f.name: _value(hints[f.name], data[json_key(f)])
        for f in dataclasses.fields(cls)  # type: ignore[arg-type]
        if json_key(f) in data
    }
    return cls(**values)


def _value(hint: Any, value: Any) -> Any:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if value is None:
        return None
    if origin in (typing.Union, types.UnionType):
        (inner,) = (a for a in args if a is not type(None))
        return _value(inner, value)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_value(args[0], v) for v in value)
        return tuple(_value(a, v) for a, v in zip(args, value, strict=True))
    if origin is list:
        return [_value(args[0], v) for v in value]
    if origin is dict:
        return {k: _value(args[1], v) for k, v in value.items()}
    own = getattr(hint, "from_json", None)
    if own is not None:
        return own(value)
    if dataclasses.is_dataclass(hint):
        return build(hint, value)  # type: ignore[arg-type]
    return value


class Json:
    """to_json and from_json derived from a dataclass's fields; the keys
    JSON_ORDER names first, where a format's order is not the fields'."""

    def to_json(self) -> dict[str, Any]:
        data = encode(self)
        return {**{k: data[k] for k in getattr(self, "JSON_ORDER", ())}, **data}

    @classmethod
    def from_json(cls: type[J], data: Any) -> J:
        return build(cls, data)


class Derived:
    """to_json derived from a view's fields and what its class declares
    (derived())."""

    def to_json(self) -> dict[str, Any]:
        return derived(self)


def derived(obj: Any) -> dict[str, Any]:
    """The JSON of a dataclass that is a view (a comparison, a verdict, a
    config recorded), by what its class declares: its fields but those in
    JSON_SKIP, those in JSON_FLAT merged into it, then the properties or
    methods JSON_EXTRA names (what a reader wants without recomputing it);
    a value JSON_AS names a function for through it, one with its own
    to_json() through that, the others through encode()."""
    cls = type(obj)
    skip = getattr(cls, "JSON_SKIP", ())
    flat = getattr(cls, "JSON_FLAT", ())
    convert = getattr(cls, "JSON_AS", {})
    out: dict[str, Any] = {}
    names = [f.name for f in dataclasses.fields(obj) if f.name not in skip]
    for name in [*names, *getattr(cls, "JSON_EXTRA", ())]:
        value = getattr(obj, name)
        value = value() if inspect.ismethod(value) else value
        value = convert[name](value) if name in convert else _json(value)
        out.update(value if name in flat else {name: value})
    return out


def _json(value: Any) -> Any:
    if hasattr(value, "to_json") and not isinstance(value, type):
        return value.to_json()
    if isinstance(value, (tuple, list)):
        return [_json(v) for v in value]
    if isinstance(value, dict):
        return {k: _json(v) for k, v in value.items()}
    return encode(value)
