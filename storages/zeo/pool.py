"""The per-run pool of fresh storages one runzeo serves: ZEOPool.

In a run, ZEOFactory.running() holds a ZEOPool: one runzeo serving a batch
of POOL_SIZE fresh, empty storages, and each trial's open() takes the next
unused one (its own name on the server, its own subdirectory); when the
batch is used up (or holds POOL_DISK_BYTES), the next open() stops that
server, removes its batch and starts another, untimed.  Starting runzeo
costs several times the phases of a small trial; the pool pays it once per
batch, not per trial.  renamed_section() gives each served section its own
storage name.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

from storages.base import StorageError, StorageFactory
from storages.zeo.server import ZEOServer

_OPENING_TAG_NAMED_1 = re.compile(r"^(\s*<[^\s<>/]+\s+)1(\s*>)", re.MULTILINE)


def renamed_section(section: str, name: str) -> str:
    """*section*, a served_section() (ZConfig text whose first opening tag
    names its storage "1": ``<filestorage 1>``), with that tag naming it
    *name* instead, so that one runzeo can serve several; the rest of the
    text is left as it is.  StorageError if no opening tag names "1"."""
    renamed, found = _OPENING_TAG_NAMED_1.subn(
        lambda m: f"{m.group(1)}{name}{m.group(2)}", section, count=1
    )
    if not found:
        first = next((ln.strip() for ln in section.splitlines() if ln.strip()), "")
        raise StorageError(
            f"cannot serve {first!r} among others: a served section opens "
            "with a tag naming its storage 1"
        )
    return renamed


def bytes_on_disk(directory: Path) -> int:
    """Bytes the files below *directory* occupy on disk (allocated blocks:
    a sparse or preallocated file counts what it holds, not its length)."""
    total = 0
    for dirpath, _, names in os.walk(directory):
        for n in names:
            try:
                total += os.stat(os.path.join(dirpath, n)).st_blocks * 512
            except FileNotFoundError:
                pass
    return total


#: Storages one runzeo serves inside ZEOFactory.running(), each a fresh,
#: empty one for one trial.  Starting and stopping runzeo costs about
#: 0.35 s, more than twice the phases of a small trial; one start per 16
#: trials makes that 0.02-0.05 s a trial, while a batch stays quick to start
#: (16 empty FileStorages as quickly as one, 16 Berkeley DB environments in
#: 0.6 s rather than 0.3 s) and cheap enough to hold: 16 FileStorages next
#: to nothing, 16 environments about 280 MB on disk and as much in runzeo's
#: memory (their regions, about 17 MB each).  A finished trial's files stay
#: until its batch ends (see also POOL_DISK_BYTES).
POOL_SIZE = 16

#: Bytes on disk past which a batch takes no more trials: the next one
#: starts a new batch even if storages are left.  Without it a batch of
#: large trials (a large data set's Data.fs is about 20 MB, an xlarge one's
#: 350 MB, twice that after a pack) would keep up to POOL_SIZE of them; so
#: a run needs at most about this much disk more than one trial does.
POOL_DISK_BYTES = 512 * 2**20


class ZEOPool:
    """One runzeo at a time serving a batch of fresh, empty storages of
    *backend* (a ``servable`` factory), one per trial: ZEOFactory.running()
    holds one.

    take() gives the next unused storage of the batch: (its server, its
    name, its directory).  The first take() makes the pool's directory
    (tempfile) and starts the first batch; a take() finding the batch used
    up (*size* storages), holding *disk_bytes* or more, or its server gone
    (killed) stops that server, removes that batch's directory and starts
    a new batch, before giving a storage of it.  A batch is a directory
    ``batch-N`` of the pool's, its storages in subdirectories "1" to
    "*size*", which are also their names on the server; its runzeo's files
    (SERVER_FILES) sit beside them.  close() stops the server and removes
    everything; the pool can be used again after it.

    Limits: a finished trial's files stay on disk until its batch ends.
    The server dies with the thread that started it (PR_SET_PDEATHSIG
    follows a thread, not the process): call take() from the thread that
    holds the pool, not from a short-lived worker.
    """

    def __init__(
        self,
        backend: StorageFactory,
        port: int = 0,
        size: int = POOL_SIZE,
        disk_bytes: int = POOL_DISK_BYTES,
    ) -> None:
        self.backend = backend
        self.port = port
        self.size = size
        self.disk_bytes = disk_bytes
        #: The pool's directory, made by the first take().
        self.directory: Path | None = None
        #: The current batch's server and directory.
        self.server: ZEOServer | None = None
        self.batch: Path | None = None
        self._batches = 0  # batches started, for their directories' names
        self._taken = 0  # storages of the current batch given out

    def take(self) -> tuple[ZEOServer, str, Path]:
        """(server, storage name, storage directory) of a storage no one has
        used, starting a new batch first when this one will not do."""
        if self._batch_over():
            self._end_batch()
            self._start_batch()
        assert self.server is not None and self.batch is not None
        self._taken += 1
        name = str(self._taken)
        return self.server, name, self.batch / name

    def _batch_over(self) -> bool:
        if self.server is None or self.batch is None or not self.server.running:
            return True
        if self._taken >= self.size:
            return True
        # A batch none of whose storages was used is never over for its size
        # (a limit below a fresh batch's own files would loop).
        return self._taken > 0 and bytes_on_disk(self.batch) >= self.disk_bytes

    def _start_batch(self) -> None:
        reason = self.backend.unavailable()
        if reason:
            raise StorageError(reason)
        if self.directory is None:
            self.directory = Path(tempfile.mkdtemp(prefix="vfab-zeo-pool-"))
        self._batches += 1
        batch = self.directory / f"batch-{self._batches}"
        batch.mkdir()
        self.batch, self._taken = batch, 0
        sections = []
        imports: tuple[str, ...] = ()
        for i in range(1, self.size + 1):
            data = batch / str(i)
            data.mkdir()
            section, imports = self.backend.served_section(data)
            sections.append(renamed_section(section, str(i)))
        # Held before it starts: whatever happens next, _end_batch stops it.
        self.server = ZEOServer(batch, sections, port=self.port, imports=imports)
        self.server.start()

    def _end_batch(self) -> None:
        server, self.server = self.server, None
        batch, self.batch = self.batch, None
        try:
            if server is not None:
                server.stop()
        finally:
            if batch is not None:
                shutil.rmtree(batch, ignore_errors=True)

    def close(self) -> None:
        """Stop the server and remove the pool's directory."""
        directory, self.directory = self.directory, None
        try:
            self._end_batch()
        finally:
            if directory is not None:
                shutil.rmtree(directory, ignore_errors=True)
