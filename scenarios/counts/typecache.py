"""The type attribute cache, set to the same state before every counted
phase, so a phase's count does not depend on what ran before it in its
process.

CPython caches attribute lookups on types in a table of 4,096 entries,
indexed by the type's version tag (a number handed out in order, anew
whenever a type changes) and the attribute name.  Which lookups collide
in that table, and miss, depends on every tag handed out before: a class
defined elsewhere, one more module imported, a different option moves
the tags of every later type.  Measured (docs/counts.md): the same
FileStorage commit counted 60.8 M or 61.4 M instructions, +0.9%, with
no change to anything it runs, its misses (`find_name_in_mro`) tripled.

settle() gives every phase the same start: it hands out tags until the
next one is a multiple of 4,096, then invalidates every type's tag and
empties the table.  The phase's types then get tags in the order the
phase first looks them up, the same table slots on every run, whatever
ran before.  It reads tags through ctypes at the offset CPython 3.10 and
3.11 give tp_version_tag, and checks that offset by watching one tag
move; where it does not (another interpreter), it settles nothing and
says so (settle() returns False).
"""

from __future__ import annotations

import ctypes
import sys

#: The type attribute cache's size (CPython's MCACHE_SIZE_EXP is 12).
TABLE_SIZE = 4096


class _TypeHead(ctypes.Structure):
    """PyTypeObject up to tp_version_tag (CPython 3.10 and 3.11, a release
    build): the fields before it are pointers or pointer-sized."""

    _fields_ = [
        *(
            (name, ctypes.c_void_p)
            for name in (
                "ob_refcnt ob_type ob_size tp_name tp_basicsize tp_itemsize "
                "tp_dealloc tp_vectorcall_offset tp_getattr tp_setattr "
                "tp_as_async tp_repr tp_as_number tp_as_sequence tp_as_mapping "
                "tp_hash tp_call tp_str tp_getattro tp_setattro tp_as_buffer "
                "tp_flags tp_doc tp_traverse tp_clear tp_richcompare "
                "tp_weaklistoffset tp_iter tp_iternext tp_methods tp_members "
                "tp_getset tp_base tp_dict tp_descr_get tp_descr_set "
                "tp_dictoffset tp_init tp_alloc tp_new tp_free tp_is_gc "
                "tp_bases tp_mro tp_cache tp_subclasses tp_weaklist tp_del"
            ).split()
        ),
        ("tp_version_tag", ctypes.c_uint),
    ]


_OFFSET = _TypeHead.tp_version_tag.offset


class _Probe:
    """A class whose tag settle() renews, one tag a time."""

    x = 0


class _Root:
    """The base of the tree settle() spends tags with."""

    x = 0


#: Height of that tree: 2**(HEIGHT + 1) - 1 classes, the largest spending
#: 1,023 tags in one lookup.
HEIGHT = 9


def _tree(height: int) -> list[list[type]]:
    """Classes by height: height 0 are leaves (subclasses of _Root), each
    class above has two bases of the height below.  Looking an attribute
    up on a class whose tags were all invalidated hands a tag to it and to
    every class under it: 2**(h + 1) - 1 at height h (and one to _Root)."""
    levels = [[type(f"_Leaf{i}", (_Root,), {}) for i in range(2**height)]]
    for h in range(1, height + 1):
        below = levels[-1]
        levels.append(
            [
                type(f"_Node{h}_{i}", (below[2 * i], below[2 * i + 1]), {})
                for i in range(len(below) // 2)
            ]
        )
    return levels


_LEVELS = _tree(HEIGHT)


def _version(cls: type) -> int:
    return ctypes.c_uint.from_address(id(cls) + _OFFSET).value


#: _Probe's tag, read in place: made once, so that settle() allocates no
#: object the collector tracks however many tags it renews (a count that
#: depended on the layout would move the phase's next collection).
_PROBE_TAG = ctypes.c_uint.from_address(id(_Probe) + _OFFSET)


def _renew() -> int:
    """Invalidate _Probe's tag, look an attribute up (which gives it the next
    tag) and return that tag."""
    _Probe.x = 0  # type.__setattr__: PyType_Modified(_Probe)
    _Probe.x  # noqa: B018 - the lookup hands out the next tag
    return _PROBE_TAG.value


def _spend(need: int) -> None:
    """Hand out about *need* tags, never more: the largest subtrees that fit,
    after invalidating the whole tree."""
    _Root.x = 0  # invalidates _Root and every class of the tree
    need -= 1  # _Root's own, at the first lookup
    for h in range(HEIGHT, -1, -1):
        size = 2 ** (h + 1) - 1
        for cls in _LEVELS[h]:
            if need < size:
                break
            cls.x  # type: ignore[attr-defined]  # noqa: B018 - *size* tags
            need -= size
        if need <= 0:
            return


def works() -> bool:
    """Whether tags read where this module reads them, and move by one."""
    if sys.implementation.name != "cpython" or not hasattr(sys, "_clear_type_cache"):
        return False
    _renew()
    first = _renew()
    return first != 0 and _renew() == first + 1


_WORKS = works()


def settle() -> bool:
    """Hand out tags until the next is a multiple of TABLE_SIZE, invalidate
    every type's tag (PyType_Modified on object reaches every subclass)
    and empty the table.  False, having changed nothing, where tags cannot
    be read here."""
    if not _WORKS:
        return False
    while (need := (TABLE_SIZE - 1 - _renew()) % TABLE_SIZE) > 0:
        if need > 2:
            _spend(need - 1)  # one left for the _renew() that reads it
    ctypes.pythonapi.PyType_Modified(ctypes.py_object(object))
    sys._clear_type_cache()
    return True
