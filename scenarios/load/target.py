"""The load's target: a database several processes open at once.

RelStorage's schemes (postgres://, mysql://, sqlite://, with RelStorage's
own zodburi query keys keep_history and driver, and data_dir for sqlite) are
opened through storages.relstorage.adapters.open_relstorage rather than
zodburi: a driver is always named (RelStorage's "auto" picks its gevent
drivers once locust is installed) and MariaDB gets the suite's
workarounds.  RelStorage's default keep_history is true, as in zodburi.

A target is named the same way everywhere (`--target` of zeoloop, scale,
serve's output and the locustfile): ``HOST:PORT`` (a ZEO server, as
--zeo-address), a zodburi URI (``zeo://127.0.0.1:8100``,
``postgres://...``, ``mysql://...``, ``sqlite://...``, ``file://`` for a
single process), or a ZConfig file holding a ``<zodb>`` section (or that
text itself, as StorageFactory.share() may yield).  open_target() turns
any of them into one ZODB.DB, with the pool size the caller asks; every
user then takes its own transaction manager and connection from it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from storages import StorageError, StorageOptions
from storages.relstorage.uri import RELSTORAGE_SCHEMES
from storages.zeo import ZEOOptions, check_reachable, open_client, parse_address


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
    host, port = parse_address(text)
    return f"zeo://{host}:{port}"


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


def zeo_address(spec: str) -> tuple[str, int] | None:
    """(host, port) of a zeo:// target over TCP, else None."""
    if not spec.startswith("zeo://"):
        return None
    where = urlsplit(spec.replace("zeo://", "http://", 1))
    if not where.hostname:
        return None  # a Unix socket
    try:
        port = where.port or 9991  # zodburi's default
    except ValueError:
        raise StorageError(f"bad port in {spec!r}") from None
    return where.hostname, port


def open_target(
    spec: str, pool_size: int = 7, wait_timeout: float | None = None
) -> Any:
    """One ZODB.DB on the target *spec* (see normalize()), or StorageError.

    A ZEO target goes through storages.zeo.open_client (a reachability check
    first, the client's wait bounded by *wait_timeout* seconds, 10 by
    default): an operation while the server is away then fails with
    ClientDisconnected after that long instead of waiting for ever."""
    import ZODB

    address = zeo_address(spec)
    if address is not None and "?" not in spec:
        storage = open_client(address, StorageOptions(ZEOOptions()), wait_timeout or 10)
        try:
            return ZODB.DB(storage, pool_size=pool_size)
        except BaseException:
            storage.close()
            raise
    if address is not None:
        check_reachable(address)
    scheme = spec.partition("://")[0]
    if scheme in RELSTORAGE_SCHEMES and not is_zconfig(spec):
        from storages.relstorage.uri import open_uri

        storage = open_uri(spec)
        try:
            return ZODB.DB(storage, pool_size=pool_size)
        except BaseException:
            storage.close()
            raise
    try:
        if is_zconfig(spec):
            import ZODB.config

            db = ZODB.config.databaseFromString(spec)
            db.setPoolSize(pool_size)
            return db
        import zodburi

        factory, dbkw = zodburi.resolve_uri(spec)
        storage = factory()
    except StorageError:
        raise
    except Exception as e:
        line = f"{type(e).__name__}: {e}".splitlines()[0]
        raise StorageError(f"cannot open target {describe(spec)}: {line}") from None
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
    target: what populating it through a client takes."""
    from storages.base import ZODBStore

    class TargetStore(ZODBStore):
        def _open(self) -> None:
            import transaction

            self.db = open_target(spec, pool_size=1)
            self._opened_cache_size = self.db.getCacheSize()
            self.transaction_manager = transaction.TransactionManager()
            self.connection = self.db.open(self.transaction_manager)

    return TargetStore(describe(spec), lambda: None, StorageOptions())
