"""vfab-bench serve: a runzeo on a populated data set, until Ctrl-C or SIGTERM.

What load generators (locust, `vfab-bench zeoloop`) talk to.  The served
storage's ZConfig section comes from the ZEO-fronted registry entry named in
SERVED (its `served` and `imports`), so any storage that has one can be
served.  With --path the data lives in that directory and is kept (a data
set already there is reused; one of another size is refused unless
--overwrite replaces the suite's data set in it, and nothing else is ever
removed); without it, in a temporary directory removed at exit.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import storages
from scenarios import dataset
from scenarios.cli.args import port_number, positive_int
from scenarios.config import ConfigError, scale_for
from storages import StorageError, StorageOptions
from storages.zeo import LOCALHOST, ZEOServer, ZEOStore, open_client
from vfab.generate import DEFAULT_SEED, SIZES, DataSpec

#: --storage choice -> the registry name of the ZEO factory that serves it.
SERVED = {"file": "zeo", "bdb": "zeo+bdb"}

#: ZEO's customary port: what locustfile.py and zeoloop look for by default.
DEFAULT_PORT = 8100


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "serve",
        help="serve a populated data set over ZEO until Ctrl-C",
        description="Start runzeo on a storage holding a vfab data set "
        "(populated unless --path already holds it), print the line "
        "'serving ... on HOST:PORT' and serve until Ctrl-C or SIGTERM.",
    )
    p.add_argument(
        "--storage",
        choices=list(SERVED),
        default="file",
        help="storage behind the server (default: file)",
    )
    p.add_argument(
        "--path",
        type=Path,
        metavar="DIR",
        help="directory for the data, created if missing and kept at exit "
        "(default: a temporary directory, removed at exit)",
    )
    p.add_argument(
        "--size",
        choices=list(SIZES),
        help="data set size (default: small)",
    )
    p.add_argument("--scale", type=positive_int, metavar="N", help="instead of --size")
    p.add_argument(
        "--seed",
        type=int,
        default=DEFAULT_SEED,
        help=f"data generator seed (default: {DEFAULT_SEED})",
    )
    p.add_argument(
        "--host",
        default=LOCALHOST,
        help=f"address to listen on (default: {LOCALHOST}; anything else "
        "exposes the database unauthenticated)",
    )
    p.add_argument(
        "--port",
        type=port_number,
        default=DEFAULT_PORT,
        metavar="N",
        help=f"port to listen on (default: {DEFAULT_PORT}; 0: a free one)",
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace a data set of another size or seed found at --path",
    )
    p.set_defaults(handler=main)


def served_factory(name: str, options: StorageOptions) -> Any:
    """The ZEO factory whose `served` section and `imports` runzeo needs for
    --storage *name*; StorageError when this tree or machine lacks it."""
    entry = SERVED[name]
    if entry not in storages.REGISTRY:
        raise StorageError(
            f"storage {name!r} is not available: this installation has no "
            f"{entry!r} storage"
        )
    factory = storages.get(entry, options)
    reason = factory.unavailable()
    if reason is not None:
        raise StorageError(f"storage {name!r} is not available: {reason}")
    return factory


def say(line: str) -> None:
    print(f"vfab-bench serve: {line}", file=sys.stderr, flush=True)


def _data_dir(path: Path | None, scratch: Path) -> Path:
    if path is None:
        data = scratch / "data"
        data.mkdir()
        return data
    if path.exists() and not path.is_dir():
        raise ConfigError(f"{path} is not a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ConfigError(f"cannot create {path}: {e.strerror}") from None
    return path.resolve()


def main(args: argparse.Namespace) -> int:
    spec = DataSpec.for_scale(scale_for(args.size, args.scale))
    options = StorageOptions()
    factory = served_factory(args.storage, options)
    # SIGTERM (a supervisor, `kill`) stops the server as Ctrl-C does,
    # including waiting for a commit in flight while populating.
    on_sigint = signal.getsignal(signal.SIGINT)
    previous = signal.signal(
        signal.SIGTERM,
        on_sigint if callable(on_sigint) else signal.default_int_handler,
    )
    scratch = Path(tempfile.mkdtemp(prefix="vfab-serve-"))
    server: ZEOServer | None = None
    try:
        data = _data_dir(args.path, scratch)
        server = ZEOServer(
            scratch,
            factory.served(data),
            host=args.host,
            port=args.port,
            imports=tuple(factory.imports),
        )
        server.start()
        _ensure_data_set(server, options, spec, args)
        where = "kept" if args.path is not None else "temporary, removed at exit"
        say(f"data in {data} ({where}); Ctrl-C or SIGTERM stops")
        host, port = server.address
        try:
            print(
                f"serving {spec.name} data set ({args.storage}) on {host}:{port}",
                flush=True,
            )
            while server.running:
                time.sleep(0.5)
        except KeyboardInterrupt:
            say("stopping")
            return 0
        say(f"runzeo exited unexpectedly: {server._last_log_line()}")
        return 1
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(scratch, ignore_errors=True)
        signal.signal(signal.SIGTERM, previous)


def _ensure_data_set(
    server: ZEOServer,
    options: StorageOptions,
    spec: DataSpec,
    args: argparse.Namespace,
) -> None:
    """Populate the served storage unless it already holds this data set."""
    address = server.address
    store = ZEOStore("serve", lambda: open_client(address, options), options)
    try:
        held = dataset.existing(store)
        wanted = {"scale": spec.scale, "seed": args.seed}
        if held is not None:
            if {k: held.get(k) for k in wanted} == wanted:
                say(f"reusing the {spec.name} data set (seed {args.seed})")
                return
            if not args.overwrite:
                size = held.get("size") or f"scale {held.get('scale')}"
                raise ConfigError(
                    f"{args.path} holds the {size} data set (seed "
                    f"{held.get('seed')}), not {spec.name} (seed {args.seed}); "
                    "use --overwrite to replace it, or another --path"
                )
        say(f"populating the {spec.name} data set (seed {args.seed})")
        started = time.perf_counter()
        dataset.populate(store, spec, args.seed)
        say(f"populated in {time.perf_counter() - started:.1f} s")
    finally:
        store.close()
