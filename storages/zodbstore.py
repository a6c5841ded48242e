"""ZODBStore: the Store over a ZODB.DB that every ZODB storage's factory
opens (storages.base holds the contract it fulfils), and the wrapper
storages (zc.zlibstorage) a factory that ``wraps_storage`` puts between
ZODB.DB and its storage.

A program that must see every store's commits and aborts (a command line
holding Ctrl-C while a commit is in flight) registers a synchronizer,
transaction's ISynchronizer, with register_synchronizer(): each store
registers it on its own transaction manager, as ZODB's Connection
registers itself.  Storages install no signal handler.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, MutableMapping
from pathlib import Path
from typing import Any

from storages.base import ROOT_KEY, StorageError, StorageFactory, StorageOptions, Store

#: A wrapper storage around a ZODB storage: storage -> wrapping storage.
Wrap = Callable[[Any], Any]

#: What register_synchronizer() was given, in order.
_synchronizers: list[Any] = []


def register_synchronizer(synchronizer: Any) -> None:
    """Register *synchronizer* (transaction.interfaces.ISynchronizer:
    newTransaction, beforeCompletion, afterCompletion) on the transaction
    manager of every ZODBStore opened or reopened from now on, before its
    connection: its beforeCompletion runs first and its afterCompletion
    first, so that what it raises there comes after the storage's two-phase
    commit or abort and before anything else can fail.  Registered once
    however often it is given."""
    if synchronizer not in _synchronizers:
        _synchronizers.append(synchronizer)


def _after_completion(synchronizers: list[Any]) -> None:
    """Each synchronizer's afterCompletion, every one called; the first
    exception raised (a held stop) raised after them."""
    raised: BaseException | None = None
    for synchronizer in synchronizers:
        try:
            synchronizer.afterCompletion(None)
        except BaseException as e:  # a stop held meanwhile: raised below
            raised = raised or e
    if raised is not None:
        raise raised


class _Swallowed(logging.Handler):
    """The first KeyboardInterrupt a record carries: an interrupt some code
    caught and logged instead of letting it through."""

    def __init__(self) -> None:
        super().__init__()
        self.interrupt: KeyboardInterrupt | None = None

    def emit(self, record: logging.LogRecord) -> None:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, KeyboardInterrupt) and self.interrupt is None:
            self.interrupt = error


@contextlib.contextmanager
def interrupts_kept() -> Iterator[None]:
    """Raise again, after the block, a KeyboardInterrupt (SIGTERM's too, for
    a program that raises one for it) that the block caught and logged:
    ZODB's FileStorage.close() catches everything around saving its index,
    logging it, and an interrupt landing there was lost."""
    swallowed = _Swallowed()
    root = logging.getLogger()
    root.addHandler(swallowed)
    try:
        yield
    finally:
        root.removeHandler(swallowed)
    if swallowed.interrupt is not None:
        raise swallowed.interrupt


def wrapping(open_storage: Callable[[], Any], wrap: Wrap | None) -> Callable[[], Any]:
    """*open_storage*, its storage behind *wrap* (when given); the storage is
    closed if the wrapper fails."""
    if wrap is None:
        return open_storage

    def open_wrapped() -> Any:
        storage = open_storage()
        try:
            return wrap(storage)
        except BaseException:
            storage.close()
            raise

    return open_wrapped


def open_wrapped(factory: StorageFactory, directory: Path, wrap: Wrap) -> Store:
    """*factory*'s store with *wrap* around its storage (``wraps_storage``)."""
    if not factory.wraps_storage:
        raise StorageError(f"storage {factory.name!r} cannot take a wrapper storage")
    opener: Any = factory  # open(directory, wrap=...) where wraps_storage
    return opener.open(directory, wrap=wrap)  # type: ignore[no-any-return]


class ZODBStore(Store):
    """A Store over a ZODB.DB: one connection with its own transaction
    manager, the suite's data under root[ROOT_KEY].

    *open_storage* returns a new IStorage on the same data each time it is
    called (reopen calls it again); *size* reports bytes on disk.

    With a *trial_key* the database is the user's, not the suite's: root()
    is root[ROOT_KEY][trial_key], reset() empties that key only, close()
    removes it in a committed transaction, and the store packs only if
    *packs* (pack removes old revisions of the whole database).  Limits: an
    interrupted process leaves its trial key behind (the name says when and
    which process wrote it); root[ROOT_KEY] itself stays, emptied.
    """

    def __init__(
        self,
        name: str,
        open_storage: Callable[[], Any],
        options: StorageOptions,
        size: Callable[[], int | None] | None = None,
        on_close: Callable[[], None] | None = None,
        trial_key: str | None = None,
        packs: bool = True,
    ) -> None:
        self.name = name
        self._open_storage = open_storage
        self._options = options
        self._size = size
        self._on_close = on_close
        self.trial_key = trial_key
        self.can_pack = packs
        self.db: Any = None
        self.connection: Any = None
        self._open()

    def _open(self) -> None:
        import transaction
        import ZODB

        storage = self._open_storage()
        # ZODB.DB commits the root object of a new database in a
        # transaction of its own, which no store's synchronizer sees: the
        # synchronizers hold a stop for it too (a SIGHUP raised inside
        # FileStorage's write lock there left the lock taken, and the abort
        # that followed waited for it forever).
        held = list(_synchronizers)
        for synchronizer in held:
            synchronizer.beforeCompletion(None)
        try:
            self.db = ZODB.DB(storage, **self._options.db_kwargs())
        except BaseException:
            storage.close()
            _after_completion(held)
            raise
        try:
            _after_completion(held)
        except BaseException:
            self.db.close()
            raise
        self._opened_cache_size = self.db.getCacheSize()
        self.transaction_manager = transaction.TransactionManager()
        for synchronizer in _synchronizers:  # before the connection's own
            self.transaction_manager.registerSynch(synchronizer)
        self.connection = self.db.open(self.transaction_manager)

    def root(self) -> MutableMapping[str, Any]:
        from persistent.mapping import PersistentMapping

        root = self.connection.root()
        if ROOT_KEY not in root:
            root[ROOT_KEY] = PersistentMapping()
        ours = root[ROOT_KEY]
        if self.trial_key is None:
            return ours  # type: ignore[no-any-return]
        if self.trial_key not in ours:
            ours[self.trial_key] = PersistentMapping()
        return ours[self.trial_key]  # type: ignore[no-any-return]

    def reset(self) -> None:
        from persistent.mapping import PersistentMapping

        if self.trial_key is None:
            self.connection.root()[ROOT_KEY] = PersistentMapping()
            self.commit()
        else:
            key = self.trial_key

            def empty_trial() -> None:
                self.root()  # root[ROOT_KEY] made where absent
                self.connection.root()[ROOT_KEY][key] = PersistentMapping()

            self._commit_retrying(empty_trial)
        self.transfer_counts()

    def _commit_retrying(self, change: Callable[[], None], attempts: int = 5) -> None:
        """change() and commit, again after a ConflictError: another run on
        the same database adds or removes its own key in root[ROOT_KEY]."""
        from ZODB.POSException import ConflictError

        for attempt in range(attempts):
            try:
                change()
                self.commit()
                return
            except ConflictError:
                self.abort()  # and see the other run's commit
                if attempt == attempts - 1:
                    raise

    def _remove_trial(self) -> None:
        """Remove this trial's key from a database the suite did not create,
        committed; nothing else is written."""
        if self.trial_key is None or self.connection is None:
            return
        key = self.trial_key

        def remove() -> None:
            ours = self.connection.root().get(ROOT_KEY)
            if ours is not None and key in ours:
                del ours[key]

        self.transaction_manager.abort()
        self._commit_retrying(remove)

    def commit(self) -> None:
        self.transaction_manager.commit()

    def abort(self) -> None:
        self.transaction_manager.abort()

    def transfer_counts(self) -> tuple[int, int] | None:
        loads, stores = self.connection.getTransferCounts(clear=True)
        return int(loads), int(stores)

    def size_bytes(self) -> int | None:
        if self._size is not None:
            return self._size()
        return int(self.db.storage.getSize())

    def reopen(self) -> None:
        self._close_db()
        self._open()

    def minimize_cache(self) -> None:
        self.connection.cacheMinimize()

    def trim_cache(self) -> None:
        self.connection.cacheGC()

    def set_cache_size(self, objects: int | None) -> None:
        if objects is None:
            objects = self._opened_cache_size
        # DB.setCacheSize reaches every connection of the pool, ours included.
        self.db.setCacheSize(objects)

    can_pack = True

    def pack(self) -> None:
        if not self.can_pack:
            raise NotImplementedError(f"{self.name}: not the suite's to pack")
        self.db.pack()

    def _close_db(self) -> None:
        if self.connection is not None:
            self.transaction_manager.abort()
            self.connection.close()
            self.connection = None
        if self.db is not None:
            db, self.db = self.db, None
            with interrupts_kept():
                db.close()

    def close(self) -> None:
        try:
            try:
                self._remove_trial()
            finally:
                self._close_db()
        finally:
            if self._on_close is not None:
                on_close, self._on_close = self._on_close, None
                on_close()
