"""Composite storages: a storage in front of another storage's factory.

zlib+NAME (storages.zlib) compresses the records of NAME's storage; zeo and
zeo+bdb (storages.zeo, storages.bdb) serve their base's storage through a
runzeo.  A composite holds its base's factory, never subclasses it, and
forwards the hooks a caller asks before it opens anything (FORWARDED): a
composite that skipped one would let a caller open a database its base
refuses (zlib+file skipping file's check_existing would open a truncated
Data.fs read-write, and FileStorage cuts such a file short without a
word).  What it declares of its base's (option groups, user errors, files
that are not the storage, whether it keeps its directory) is derived from
the base, never copied.
tests/storages/test_composites.py runs every composite against a damaged base.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, ClassVar

from storages.base import StorageFactory, StorageOptions

#: The hooks of StorageFactory a composite answers by asking its base
#: first (the composite may add its own checks after the base's).
FORWARDED: tuple[str, ...] = (
    "unavailable",
    "preflight",
    "check_existing",
    "running",
)

#: Attributes a composite has as the union of its own and its base's.
_UNITED = ("option_groups", "user_errors", "not_storage")


class CompositeFactory(StorageFactory):
    """A storage in front of ``base``'s: every hook of FORWARDED asks the
    base (self.base_factory, made with the same options) first.

    A subclass's option_groups, user_errors and not_storage are its own
    and its base's; keeps_directory is the base's unless the subclass (or
    a composite it derives from) says otherwise."""

    #: The factory of the storage this one is in front of.
    base: ClassVar[type[StorageFactory]]

    #: What this class and the composites it derives from declare
    #: themselves of _UNITED and keeps_directory (before derivation).
    _declared: ClassVar[dict[str, Any]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = {
            name: vars(cls)[name]
            for name in (*_UNITED, "keeps_directory")
            if name in vars(cls)
        }
        cls._declared = {**cls._declared, **own}
        base = getattr(cls, "base", None)
        if base is None:
            return
        for name in _UNITED:
            mine = cls._declared.get(name, getattr(StorageFactory, name))
            setattr(cls, name, tuple(dict.fromkeys((*mine, *getattr(base, name)))))
        cls.keeps_directory = cls._declared.get("keeps_directory", base.keeps_directory)

    def __init__(self, options: StorageOptions | None = None) -> None:
        super().__init__(options)
        # Made now: the base's bad options fail here, not in open().
        self.base_factory = self.base(self.options)

    def unavailable(self) -> str | None:
        return self.base_factory.unavailable()

    def preflight(self) -> None:
        self.base_factory.preflight()

    def check_existing(self, directory: Path, recover: bool = False) -> str | None:
        # The base's files are the ones a crash cut (zlib+file: FileStorage
        # drops a cut transaction by its headers, never decoding a record).
        return self.base_factory.check_existing(directory, recover)

    def running(self) -> contextlib.AbstractContextManager[Any]:
        return self.base_factory.running()


def root_base(factory: type[StorageFactory]) -> type[StorageFactory]:
    """The storage at the bottom of *factory*'s chain of bases (itself when
    it is no composite): where its data lives."""
    while issubclass(factory, CompositeFactory):
        factory = factory.base
    return factory
