"""vfab-bench serve: a runzeo on a populated data set (populate's directory
convention, or a temporary one), until Ctrl-C or SIGTERM; any servable
storage, its ZConfig section from its factory (docs/internals.md).
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import time
from pathlib import Path

import storages
from scenarios import argtypes
from scenarios.cli.args import (
    add_data_set_options,
    add_recover_option,
    data_set_scale,
)
from scenarios.data import datadir, dataset
from scenarios.errors import EXIT_FAILED, EXIT_OK, ConfigError
from scenarios.interrupts import remove_tree
from scenarios.load.target import describe, open_store
from storages import StorageError, StorageFactory, StorageOptions
from storages.composite import root_base
from storages.options import ListenOptions
from storages.ports import exposed, host_port
from storages.process import ServedShared
from storages.zeo import (
    LOCALHOST,
    ZEOServer,
    check_port_free,
    port_number,
)
from vfab.generate import DataSpec


def servable() -> list[str]:
    """Registry names of the storages runzeo can serve, in registry order."""
    return [name for name, f in storages.REGISTRY.items() if f.servable]


def shareable() -> list[str]:
    """Registry names of the shared storages runzeo does not serve
    (RelStorage's): serve holds a fresh database of theirs (share()) and
    prints the target clients open."""
    # A composite over a servable base (zeo: runzeo in front of file) is
    # what serving that base with runzeo already is.
    return [
        name
        for name, f in storages.REGISTRY.items()
        if f.shared and not f.servable and not root_base(f).servable
    ]


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
        choices=servable() + shareable(),
        default="file",
        metavar="NAME",
        help="storage behind the server (default: file; choices: "
        + ", ".join(servable() + shareable())
        + "); a RelStorage one is served by its own database server, and the "
        "line printed names its URI instead of HOST:PORT",
    )
    p.add_argument(
        "--path",
        type=argtypes.path,
        metavar="DIR",
        help="data directory, kept at exit: a new or empty one is populated "
        "(as by vfab-bench populate), one populate wrote is served "
        "(default: a temporary directory, removed at exit)",
    )
    add_data_set_options(p)
    p.add_argument(
        "--host",
        metavar="ADDRESS",
        help="address runzeo, or the database server of relstorage-pg and "
        f"relstorage-mysql, listens on (default: {LOCALHOST}; IPv6 too: ::1); "
        "any address but loopback exposes the database to whoever reaches "
        "it, unauthenticated, and serve says so on stderr",
    )
    p.add_argument(
        "--port",
        type=port_number,
        metavar="N",
        help=f"port to listen on (default: {DEFAULT_PORT} for runzeo, a free "
        "one for a database server; 0: a free one)",
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace a data set of another size or seed at --path "
        "(removing only the files populate created)",
    )
    add_recover_option(p)
    p.set_defaults(handler=main)


def served_factory(name: str, options: StorageOptions) -> StorageFactory:
    """The factory whose served_section() runzeo serves for --storage
    *name*; StorageError when this machine lacks it."""
    factory = storages.get(name, options)
    reason = factory.unavailable()
    if reason is not None:
        raise StorageError(f"storage {name!r} is not available: {reason}")
    return factory


def say(line: str) -> None:
    print(f"vfab-bench serve: {line}", file=sys.stderr, flush=True)


def listen_address(args: argparse.Namespace) -> tuple[str, int] | None:
    """Where --storage's server listens ((host, port 0: a free one)),
    checked before any work: the name resolves, the address is this
    machine's, the port is free; None for a storage with no server
    (relstorage-sqlite), which refuses --host and --port.  StorageError or
    ConfigError, one line, otherwise."""
    served = args.storage in servable()
    if not served and not storages.factory_class(args.storage).starts_server:
        if args.host is not None or args.port is not None:
            raise ConfigError(
                f"--host, --port: {args.storage} has no server to listen "
                "(its clients open its files: the target serve prints)"
            )
        return None
    host = LOCALHOST if args.host is None else args.host.strip()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]  # [::1], as in a URI
    if not host:
        raise ConfigError("--host: empty address")
    port = args.port if args.port is not None else DEFAULT_PORT if served else 0
    check_port_free(host, port)
    return host, port


def main(args: argparse.Namespace) -> int:
    listen = listen_address(args)  # before anything else
    where = args.path if args.path is not None else Path(tempfile.gettempdir())
    spec = DataSpec.for_scale(data_set_scale(args, where))
    if args.storage not in servable():
        options = StorageOptions(*([ListenOptions(*listen)] if listen else []))
        return _share(args, served_factory(args.storage, options), spec)
    assert listen is not None
    host, port = listen
    factory = served_factory(args.storage, StorageOptions())
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
        data = (args.path or scratch / "data").absolute()
        _ensure_data_set(
            data, args.storage, spec, args.seed, args.overwrite, args.recover
        )
        section, imports = factory.served_section(data)
        server = ZEOServer(scratch, section, host=host, port=port, imports=imports)
        server.start()
        where = "kept" if args.path is not None else "temporary, removed at exit"
        say(f"data in {data} ({where}); Ctrl-C or SIGTERM stops")
        address = host_port(*server.address)
        warning = exposed(*server.address)
        if warning:
            say(warning)
        try:
            print(
                f"serving {spec.name} data set ({args.storage}) on {address}",
                flush=True,
            )
            say(f"clients: --target {address} (or zeo://{address})")
            while server.running:
                time.sleep(0.5)
        except KeyboardInterrupt:
            say("stopping")
            return EXIT_OK
        say(f"runzeo exited unexpectedly: {server.last_log_line()}")
        return EXIT_FAILED
    finally:
        if server is not None:
            server.stop()
        remove_tree(scratch)
        signal.signal(signal.SIGTERM, previous)


def _ensure_data_set(
    path: Path,
    storage: str,
    spec: DataSpec,
    seed: int,
    overwrite: bool,
    recover: bool = False,
) -> None:
    """Populate *path* unless it already holds this data set (as populate
    would: see scenarios.data.datadir for what it refuses and what it removes).
    A data set already there is checked whole first (runzeo opens it
    read-write, and a damaged FileStorage opened so is silently cut short);
    with *recover*, one whose only fault is a crash's cut last transaction
    is recovered (and serve says what it dropped)."""
    marker = datadir.read_marker(path) if path.is_dir() else None
    held = (marker or {}).get("spec", {})
    if (
        marker is not None
        and marker.get("complete")
        and marker["storage"] == storage
        and (held.get("scale"), held.get("seed")) == (spec.scale, seed)
    ):
        # Refuse before saying anything.
        dropped = datadir.check_data_set(storage, path, recover=recover)
        if dropped is not None:
            say(dropped)
        say(f"reusing the {spec.name} data set (seed {seed}) in {path}")
        return
    replaced = datadir.plan(storage, path, overwrite)  # refuse before saying anything
    if replaced:
        dropped = datadir.check_data_set(storage, path, recover=recover)
        if dropped is not None:
            say(dropped)
    say(f"populating the {spec.name} data set (seed {seed})")
    started = time.perf_counter()
    datadir.populate(
        storage, path, spec, seed, overwrite=overwrite, progress=say, checked=True
    )
    say(f"populated in {time.perf_counter() - started:.1f} s")


def _share(args: argparse.Namespace, factory: StorageFactory, spec: DataSpec) -> int:
    """A shared storage runzeo does not serve: a fresh database of its own
    (factory.share()), populated through a client, held until Ctrl-C or
    SIGTERM; prints 'serving ... on TARGET'."""

    if args.path is not None:
        raise ConfigError(f"--path: {args.storage} keeps its data in its server")
    on_sigint = signal.getsignal(signal.SIGINT)
    previous = signal.signal(
        signal.SIGTERM,
        on_sigint if callable(on_sigint) else signal.default_int_handler,
    )
    scratch = Path(tempfile.mkdtemp(prefix="vfab-serve-"))
    try:
        with factory.running(), factory.share(scratch) as shared:
            say(f"populating the {spec.name} data set (seed {args.seed})")
            store = open_store(shared.client)
            try:
                dataset.populate(store, spec, args.seed)
            finally:
                store.close()
            if isinstance(shared, ServedShared):  # a server it started
                warning = exposed(*shared.server.address)
                if warning:
                    say(warning)
            try:
                print(
                    f"serving {spec.name} data set ({args.storage}) on "
                    f"{describe(shared.client)}",
                    flush=True,
                )
                say("Ctrl-C or SIGTERM stops")
                while shared.server_running:
                    time.sleep(0.5)
            except KeyboardInterrupt:
                say("stopping")
                return EXIT_OK
            say("the database server exited unexpectedly")
            return EXIT_FAILED
    finally:
        remove_tree(scratch)
        signal.signal(signal.SIGTERM, previous)
