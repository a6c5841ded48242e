"""Reading ZODB records without importing a class: a record's class from the
GLOBAL opcode of its first pickle, and the plain part of its state, so a
census works on any database and never runs its code.
"""

from __future__ import annotations

import io
import pickletools
from typing import Any

from zodbpickle.pickle import Unpickler

#: Class name given to a record whose class cannot be read.
UNKNOWN_CLASS = "?"


def class_name(data: bytes) -> str:
    """'module.Name' of the class in a ZODB data record's first pickle.

    Reads the pickle's GLOBAL (or STACK_GLOBAL) opcode; never imports.
    """
    # ZODB writes b'\x80\x03cmodule\nName\n...': the fast, common case.
    head = data[2:] if data[:1] == b"\x80" else data
    for prefix in (b"c", b"(c"):
        if head.startswith(prefix):
            module, name, _ = head[len(prefix) :].split(b"\n", 2)
            return f"{module.decode()}.{name.decode()}"
    strings: list[str] = []
    try:
        for op, arg, _ in pickletools.genops(data):  # stops at the first STOP
            if op.name in ("GLOBAL", "INST"):
                where, _, what = str(arg).partition(" ")
                return f"{where}.{what}"
            if op.name == "STACK_GLOBAL" and len(strings) >= 2:
                return f"{strings[-2]}.{strings[-1]}"
            if isinstance(arg, str):
                strings.append(arg)
    except Exception:  # a damaged record is counted, not fatal
        pass
    return UNKNOWN_CLASS


class Ref:
    """A persistent reference met while reading a state (holds the oid)."""

    def __init__(self, ref: Any) -> None:
        oid = ref[0] if isinstance(ref, tuple) else ref
        self.oid = oid.encode("latin-1") if isinstance(oid, str) else oid


class _Opaque:
    """Stands in for any class a state names; calling it gives None."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __setstate__(self, state: Any) -> None:
        pass


class _StateReader(Unpickler):  # type: ignore[misc]
    """Unpickles with every class replaced by _Opaque (nothing imported)
    and every persistent reference by Ref."""

    def find_class(self, module: str, name: str) -> type[_Opaque]:
        return _Opaque

    def persistent_load(self, ref: Any) -> Ref:
        return Ref(ref)


def plain_state(data: bytes) -> Any:
    """The state (second pickle) of a record, read by _StateReader, or None
    if it cannot be read that way.  Enough to read a PersistentMapping's
    keys and plain values."""
    try:
        u = _StateReader(io.BytesIO(data))
        u.load()
        return u.load()
    except Exception:
        return None


def mapping_data(data: bytes) -> dict[Any, Any] | None:
    """The items of a pickled PersistentMapping (ZODB's root is one)."""
    state = plain_state(data)
    if not isinstance(state, dict):
        return None
    for key in ("data", "_container"):  # ZODB 3.x used _container
        if isinstance(state.get(key), dict):
            return state[key]  # type: ignore[no-any-return]
    return None
