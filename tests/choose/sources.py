"""Sources for choose --from: a FileStorage written by an application
class the test then makes unimportable, and a real wrapper storage that
drops one record it is given (registered for a test)."""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import storages
from storages import Shared, StorageFactory
from storages.base import URIScheme

APP = """
import persistent

class Gadget(persistent.Persistent):
    def __init__(self, n):
        self.n = n
        self.blob = "x" * (n % 40)
"""


def write_source(
    path: Path, transactions: int = 30, per: int = 10, payload: int = 0
) -> tuple[int, int]:
    """A Data.fs written through an application module that is removed
    afterwards (its class cannot be imported again): (its records, its
    objects).  *payload*: bytes more in each object (a source far larger
    than one transaction)."""
    import transaction
    import ZODB
    from BTrees.OOBTree import OOBTree
    from ZODB.FileStorage import FileStorage

    module_dir = path.parent / "appcode"
    module_dir.mkdir()
    (module_dir / "choose_app.py").write_text(APP)
    sys.path.insert(0, str(module_dir))
    try:
        app = importlib.import_module("choose_app")
        db = ZODB.DB(FileStorage(str(path)))
        try:
            tm = transaction.TransactionManager()
            conn = db.open(tm)
            conn.root()["gadgets"] = OOBTree()
            tm.commit()
            tree = conn.root()["gadgets"]
            for i in range(transactions):
                for j in range(per):
                    tree[(i, j)] = gadget = app.Gadget(i * per + j)
                    if payload:
                        gadget.blob = bytes([j % 256]) * payload
                if i:
                    tree[(i - 1, 0)].n = -i  # a second revision
                tm.commit()
        finally:
            db.close()
    finally:
        sys.path.remove(str(module_dir))
        sys.modules.pop("choose_app", None)
        for f in module_dir.iterdir():
            f.unlink()
        module_dir.rmdir()
    for name in ("index", "tmp", "lock"):
        Path(f"{path}.{name}").unlink(missing_ok=True)
    oids = [r.oid for txn in _iterate(path) for r in txn]
    return len(oids), len(set(oids))


def _iterate(path: Path) -> Iterator[Any]:
    from ZODB.FileStorage import FileIterator

    it = FileIterator(str(path))
    try:
        yield from it
    finally:
        it.close()


def digest(directory: Path) -> dict[str, str]:
    """Every file below *directory* by name, and its bytes' digest."""
    return {
        str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


class LossyStorage:
    """A real FileStorage behind a wrapper that drops the fifth record it
    is asked to restore (and forwards everything else)."""

    DROP = 5

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._seen = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def restore(self, oid: bytes, serial: bytes, data: Any, version: str,
                prev_txn: Any, transaction: Any) -> None:  # fmt: skip
        self._seen += 1
        if self._seen == self.DROP:
            return
        self._inner.restore(oid, serial, data, version, prev_txn, transaction)


class LossyFactory(StorageFactory):
    """A shared storage (lossy:// URIs) that loses one record."""

    name = "lossy-file"
    description = "FileStorage behind a wrapper that drops one record (tests)"
    keeps_directory = True
    uri_schemes: ClassVar[tuple[URIScheme, ...]] = (URIScheme("lossy"),)

    @classmethod
    def uri_opener(
        cls, uri: str, read_only: bool, wait_timeout: float | None = None
    ) -> Any:
        from ZODB.FileStorage import FileStorage

        path = uri.partition("://")[2]
        return lambda: LossyStorage(FileStorage(path, read_only=read_only))

    @contextlib.contextmanager
    def share(self, directory: Path) -> Iterator[Shared]:
        yield Shared(f"lossy://{directory / 'Data.fs'}")

    def open(self, directory: Path) -> Any:
        return storages.get("file", self.options).open(directory)


def verdict(stdout: str) -> tuple[str, dict[str, str]]:
    """choose's verdict, printed first: its first line, and each
    candidate's line (wrapped lines joined) by storage; no line over 100
    columns."""
    block = stdout.partition("\n\n")[0].splitlines()
    assert all(len(line) <= 100 for line in block), stdout
    rows: dict[str, str] = {}
    last = ""
    for line in block[1:]:
        if line.startswith("    ") and last:
            rows[last] += " " + line.strip()
        elif line.startswith("  ") and not line.startswith("   "):
            last = line.strip().partition(":")[0]
            rows[last] = line.strip().partition(": ")[2]
        else:
            last = ""
    return block[0], rows


def main(argv: list[str]) -> int:
    """python -m tests.choose.sources PATH [TRANSACTIONS [PER]]: a source
    for choose --from (docs/choose.md: the limit's 100,000 objects)."""
    path = Path(argv[0])
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        print(f"{path} exists", file=sys.stderr)
        return 2
    numbers = [int(a) for a in argv[1:3]]
    records, objects = write_source(path, *numbers)
    print(f"{path}: {records:,} records, {objects:,} objects")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
