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
from storages.zeo import address_uri, parse_address
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
    _note_checked(spec)


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
) -> Any:
    """One ZODB.DB on the target *spec* (see normalize()), or StorageError.

    A URI opens as storages.named opens every database a user names (ZEO's
    client checks that its server answers, then waits for it at most
    *wait_timeout* seconds, 10 by default, so that an operation while the
    server is away fails with ClientDisconnected instead of waiting for
    ever); ZConfig text through ZODB.config.  What it names here is
    checked first (check_target; *must_exist*: see there)."""
    import ZODB

    check_target(spec, must_exist)
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
