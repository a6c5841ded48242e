"""The load's target: a database several processes open at once.

A URI opens through storages.named, as every database a user names: a
storage that opens its URIs itself says so (RelStorage's postgres://,
mysql://, sqlite:// through the suite's opener: a driver always named,
MariaDB's workarounds; a ZEO server over TCP through its client with a
bounded wait), the others through zodburi.

A target is named the same way everywhere (`--target` of zeoloop, scale,
serve's output and the locustfile): ``HOST:PORT`` (a ZEO server, as
--zeo-address), a zodburi URI (``zeo://127.0.0.1:8100``,
``postgres://...``, ``mysql://...``, ``sqlite://...``, ``file://`` for a
single process), or a ZConfig file holding a ``<zodb>`` section (or that
text itself, as StorageFactory.share() may yield).  open_target() turns
any of them into one ZODB.DB, with the pool size the caller asks; every
user then takes its own transaction manager and connection from it.

Before the first open, what the target names on this machine (a Data.fs, a
BDB environment, RelStorage's SQLite files; in a URI or in the ZConfig
text, wrappers included) is checked whole without writing (check_target:
storages.checks, the factories' check_at), as every database a user names:
a damaged or foreign one is refused, one line, before anything opens it
for writing.  Checked once per run: the processes a command starts after
its check inherit the note that it was (the environment variable
CHECKED_ENV), and do not read the files again while others write them.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from storages import StorageError, StorageOptions
from storages.errors import one_line
from storages.named import URISource, open_one_line
from storages.zeo import ZEOOptions, address_uri, parse_address
from storages.zeo import uri_address as zeo_address  # noqa: F401 - scenarios.load.mix's


def normalize(text: str) -> str:
    """The target as a client spec: HOST:PORT as ``zeo://HOST:PORT``, a
    ZConfig file as its text, a URI or ZConfig text as given; StorageError
    for anything else."""
    text = text.strip()
    if not text:
        raise StorageError("empty target: expected HOST:PORT, a URI or a ZConfig file")
    if is_zconfig(text) or "://" in text:
        return text
    path = Path(text)
    if path.suffix in (".conf", ".cfg", ".zcml") or path.is_file():
        try:
            return path.read_text(encoding="utf-8")
        except OSError as e:
            raise StorageError(f"cannot read target {path}: {e.strerror}") from None
    return address_uri(parse_address(text))


#: Targets already checked (digests, comma-separated): set by
#: check_target() in this process, inherited by the client processes it
#: starts afterwards.
CHECKED_ENV = "VFAB_CHECKED_TARGETS"


def check_target(spec: str, must_exist: bool = True) -> None:
    """Check, writing nothing, every database on this machine the target
    *spec* names (a file:// or sqlite:// URI, a ZConfig text's sections):
    DamagedStorage or StorageError, one line, for a damaged or foreign one.
    Once per run (CHECKED_ENV); a server's database is its server's.
    *must_exist*: false for a database the command itself makes (a fresh
    shared one it populates through a client)."""
    if _digest(spec) in os.environ.get(CHECKED_ENV, "").split(","):
        return
    if is_zconfig(spec):
        from storages.checks import check_config

        check_config(spec, must_exist=must_exist)
    else:
        source = URISource(spec)
        source.validate()
        source.check_files(must_exist=must_exist)
        check_history_mode(spec)
    _note_checked(spec)


def check_history_mode(spec: str) -> None:
    """StorageError when a sqlite:// target's keep_history is not the mode
    its existing database was made in: RelStorage would change the schema
    of a history-free database opened history-preserving (one database per
    mode) before failing.  Read with SQLite's immutable mode: no file is
    touched."""
    import sqlite3
    from urllib.parse import parse_qsl, quote, urlsplit

    if not spec.startswith("sqlite://"):
        return
    query = dict(parse_qsl(urlsplit(spec.replace("sqlite://", "http://x", 1)).query))
    data_dir = query.get("data_dir")
    main = Path(data_dir) / "main.sqlite3" if data_dir else None
    if main is None or not main.is_file():
        return
    wanted = query.get("keep_history", "true").lower() in ("1", "true", "yes", "on")
    try:
        connection = sqlite3.connect(
            f"file:{quote(str(main))}?mode=ro&immutable=1", uri=True
        )
        try:
            columns = {
                row[1] for row in connection.execute("PRAGMA table_info(object_state)")
            }
        finally:
            connection.close()
    except sqlite3.Error as e:
        raise StorageError(f"cannot read {main}: {e}") from None
    if not columns:
        return  # no schema yet: a new database
    made = "prev_tid" in columns
    if made != wanted:
        mode = "history-preserving" if made else "history-free"
        raise StorageError(
            f"the RelStorage database in {data_dir} is {mode}, but the target "
            f"asks keep_history={'true' if wanted else 'false'}: add "
            f"keep_history={'true' if made else 'false'} to the URI"
        )


def _digest(spec: str) -> str:
    return hashlib.sha256(spec.encode()).hexdigest()[:16]


def _note_checked(spec: str) -> None:
    checked = os.environ.get(CHECKED_ENV, "").split(",")
    os.environ[CHECKED_ENV] = ",".join(filter(None, [*checked, _digest(spec)]))


def is_zconfig(spec: str) -> bool:
    return spec.lstrip().startswith(("<", "%"))


def describe(spec: str) -> str:
    """One line naming the target (a ZConfig text's first section)."""
    if not is_zconfig(spec):
        return spec
    for line in spec.splitlines():
        line = line.strip()
        if line.startswith("<") and not line.startswith(("<zodb", "</")):
            return f"ZConfig {line}"
    return "ZConfig"


def open_target(
    spec: str,
    pool_size: int = 7,
    wait_timeout: float | None = None,
    must_exist: bool = True,
    server_sync: bool = False,
) -> Any:
    """One ZODB.DB on the target *spec* (see normalize()), or StorageError.

    A URI opens as storages.named opens every database a user names (ZEO's
    client checks that its server answers, then waits for it at most
    *wait_timeout* seconds, 10 by default, so that an operation while the
    server is away fails with ClientDisconnected instead of waiting for
    ever); ZConfig text through ZODB.config.  What it names here is
    checked first (check_target; *must_exist*: see there).  *server_sync*:
    a ZEO server named HOST:PORT (zeo:// without keys) is opened with
    server_sync, so each transaction sees every commit acknowledged before
    it began (scenarios.load.promises); other targets say it themselves
    (a ZConfig <zeoclient>'s server-sync)."""
    import ZODB

    check_target(spec, must_exist)
    address = None if is_zconfig(spec) or "?" in spec else zeo_address(spec)
    if server_sync and address is not None:
        from storages.zeo.factory import WAIT_TIMEOUT_S, open_client

        timeout = WAIT_TIMEOUT_S if wait_timeout is None else wait_timeout
        storage = open_client(
            address, StorageOptions(ZEOOptions()), timeout, server_sync=True
        )
        try:
            return ZODB.DB(storage, pool_size=pool_size)
        except BaseException:
            storage.close()
            raise
    if is_zconfig(spec):
        try:
            import ZODB.config

            db = ZODB.config.databaseFromString(spec)
        except StorageError:
            raise
        except Exception as e:
            raise StorageError(
                f"cannot open target {describe(spec)}: {one_line(e)}"
            ) from None
        db.setPoolSize(pool_size)
        return db
    source = URISource(spec)
    opener, dbkw = source.resolve(read_only=False, wait_timeout=wait_timeout)
    storage = open_one_line(opener, source)
    kwargs = {k: v for k, v in dbkw.items() if k != "pool_size"}
    try:
        return ZODB.DB(storage, pool_size=pool_size, **kwargs)
    except BaseException:
        storage.close()
        raise


def add_target_option(parser: Any, help: str | None = None) -> None:
    """--target on *parser* (argparse's or locust's), as text: the one
    declaration zeoloop, scale and the locustfile use."""
    parser.add_argument(
        "--target",
        default="",
        metavar="TARGET",
        help=help
        or "the database the clients share: HOST:PORT (ZEO), a zodburi URI "
        "(zeo://, postgres://, mysql://, sqlite://) or a ZConfig file; "
        "replaces --zeo-address",
    )


def open_store(spec: str) -> Any:
    """A storages Store (root, commit, close) over one connection to the
    target: what populating it through a client takes (a new database may
    be made there: a fresh shared one the command started)."""
    from storages.zodbstore import ZODBStore

    class TargetStore(ZODBStore):
        def _open(self) -> None:
            import transaction

            self.db = open_target(spec, pool_size=1, must_exist=False)
            self._opened_cache_size = self.db.getCacheSize()
            self.transaction_manager = transaction.TransactionManager()
            self.connection = self.db.open(self.transaction_manager)

    return TargetStore(describe(spec), lambda: None, StorageOptions())
