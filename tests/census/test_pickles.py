"""scenarios.census.pickles: class names read from records, never imported."""

from __future__ import annotations

import pickle
import types

from scenarios.census import pickles


def test_class_name_never_imports() -> None:
    assert pickles.class_name(b"\x80\x03cpkg.mod\nKlass\nq\x00N\x86q\x01.") == (
        "pkg.mod.Klass"
    )
    # protocol 4: STACK_GLOBAL, as another writer might produce
    p4 = pickle.dumps((types.SimpleNamespace, None), protocol=4)
    assert pickles.class_name(p4 + b"state") == "types.SimpleNamespace"
    assert pickles.class_name(b"garbage") == pickles.UNKNOWN_CLASS
