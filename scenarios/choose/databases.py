"""A candidate's fresh database, opened the way its clients open it: a
shared one (share(): a server's URI or ZConfig text) or, for a storage
only one process opens, the ZConfig section runzeo would serve, as a
``<zodb>`` text its one client process opens.  Also the raw ZODB storage
behind such a spec (--from copies into it with the storage API: no
ZODB.DB, which would write a root object of its own first)."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from scenarios.interrupts import remove_tree
from scenarios.load.target import is_zconfig
from storages import Shared, StorageError
from storages.errors import one_line


def served_spec(factory: Any, directory: Path) -> str:
    """The ``<zodb>`` ZConfig text of *factory*'s database in *directory*
    (what runzeo would serve: served_section), for one process."""
    section, imports = factory.served_section(directory)
    head = "".join(f"%import {module}\n" for module in imports)
    return f"{head}<zodb>\n{section}\n</zodb>\n"


@contextlib.contextmanager
def fresh(factory: Any, prefix: str = "vfab-choose-") -> Iterator[tuple[Shared, Path]]:
    """A fresh, empty database of *factory* (inside its running()), and
    the directory holding its files; dropped on leaving, whatever
    happens."""
    scratch = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        data = scratch / "data"
        data.mkdir()
        if factory.shared:
            with factory.share(data) as shared:
                yield shared, data
        else:
            yield Shared(served_spec(factory, data)), data
    finally:
        remove_tree(scratch)


def open_raw(spec: str) -> Any:
    """The ZODB storage a client spec names (URI or ZConfig text), opened
    for writing; StorageError in one line."""
    if not is_zconfig(spec):
        from storages.named import URISource

        return URISource(spec).open(read_only=False)
    import ZConfig
    import ZODB.config

    try:
        config, _ = ZConfig.loadConfigFile(ZODB.config.getDbSchema(), _Text(spec))
        return config.database[0].config.storage.open()
    except Exception as e:  # noqa: BLE001 - ZConfig's and the backend's
        raise StorageError(
            f"cannot open the candidate's database: {one_line(e)}"
        ) from None


class _Text:
    """ZConfig reads a file-like object with a URL (for %import's
    messages)."""

    def __init__(self, text: str) -> None:
        import io

        self._io = io.StringIO(text)
        self.read = self._io.read
        self.readline = self._io.readline
        self.url = "<choose>"

    def close(self) -> None:
        self._io.close()


def size_on_disk(directory: Path, not_storage: tuple[str, ...]) -> int | None:
    """Bytes of the files below *directory* that are the storage's (None
    when the database is not there: a server's own directory)."""
    total, found = 0, False
    for path in directory.rglob("*"):
        if path.is_file() and not path.name.endswith(not_storage):
            total += path.stat().st_size
            found = True
    return total if found else None
