"""A FileStorage that does deliberate extra work in every store(), for the
tests of `compare` on count files (tests/counts/test_counts.py): a ZConfig section
type a --storage-config file names after "%import tests.support.slowstore".

    %import tests.support.slowstore
    <zodb slow>
      <slowfilestorage>
        path /tmp/x/Data.fs
        extra 300
      </slowfilestorage>
    </zodb>

*extra* is the iterations of a small loop per store() (0: none); test code
only, never installed.
"""

from __future__ import annotations

from typing import Any

from ZODB.config import BaseConfig
from ZODB.FileStorage import FileStorage

#: A ZConfig file of one slowed FileStorage column (format path, extra, name).
CONFIG = """\
%import tests.support.slowstore
<zodb {name}>
  <slowfilestorage>
    path {path}
    extra {extra}
  </slowfilestorage>
</zodb>
"""

#: Iterations of the loop per store() that add about 5% to the instructions
#: of every commit row of the small data set (300: +66-75%).
EXTRA_5_PERCENT = 22


class SlowFileStorage(FileStorage):
    """FileStorage, but store() first spins *extra* iterations."""

    def __init__(self, path: str, extra: int = 0, **options: Any) -> None:
        super().__init__(path, **options)
        self._extra = extra

    def store(
        self, oid: bytes, oldserial: bytes, data: bytes, version: str, transaction: Any
    ) -> Any:  # noqa: E501
        total = 0
        for i in range(self._extra):
            total += i
        return super().store(oid, oldserial, data, version, transaction)


class SlowFileStorageConfig(BaseConfig):
    """Datatype of <slowfilestorage> (component.xml)."""

    def open(self) -> SlowFileStorage:
        return SlowFileStorage(self.config.path, extra=self.config.extra)
