"""scale's options for how and where its clients run: --concurrency and
--clients-per-process (scenarios.clients.concurrency), --workers and the locust
master's address (scenarios.clients.remote.cluster); their checks before any work,
and the fleets a run's points use.  Declared here, as the load options are
in scenarios.load.options, so that the command module only wires them.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import sys
from collections.abc import Iterator
from typing import Any

import storages
from scenarios.argtypes import at_least, positive_float
from scenarios.clients import concurrency
from scenarios.clients.remote.seal import new_token, token_from_env
from scenarios.errors import ConfigError
from scenarios.scale.config import (
    CONNECT_TIMEOUT_S,
    MASTER_PORT,
    MAX_CLIENTS,
    ScaleConfig,
)
from storages.ports import LOCALHOST
from storages.zeo import check_port_free, port_number


def add_concurrency_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("how the clients run (zodbshootout's three kinds)")
    g.add_argument(
        "--concurrency",
        choices=concurrency.KINDS,
        default=concurrency.DEFAULT_KIND,
        help="one process per client (default), or threads or gevent "
        "greenlets sharing a process and its one ZODB.DB",
    )
    g.add_argument(
        "--clients-per-process",
        type=at_least(1, MAX_CLIENTS),
        metavar="N",
        help="threads and greenlets: clients in one process (default: all of "
        "a point's, a process per host)",
    )


def add_cluster_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group(
        "several hosts: the clients on locust workers (docs/cluster.md)"
    )
    g.add_argument(
        "--workers",
        type=at_least(1, MAX_CLIENTS),
        metavar="N",
        help="run the clients on N `vfab-bench worker` hosts, as a locust "
        "master (a server this run starts listens on --master-bind-host)",
    )
    g.add_argument(
        "--master-bind-host",
        metavar="ADDRESS",
        help=f"address the workers reach this host at (default: {LOCALHOST}, "
        "workers on this machine only)",
    )
    g.add_argument(
        "--master-port",
        type=port_number,
        metavar="N",
        help=f"port the workers connect to (default: {MASTER_PORT}, locust's)",
    )
    g.add_argument(
        "--connect-timeout",
        type=positive_float,
        metavar="SECONDS",
        help=f"how long to wait for the workers (default: {CONNECT_TIMEOUT_S:g})",
    )


@dataclasses.dataclass(frozen=True)
class ClusterOptions:
    """The cluster's options as given (None: not given): --workers (0:
    none), --master-bind-host, --master-port, --connect-timeout."""

    workers: int = 0
    master_bind_host: str | None = None
    master_port: int | None = None
    connect_timeout: float | None = None


def cluster_address(cluster: ClusterOptions) -> tuple[str, int] | None:
    """Where the workers connect ((host, port), checked free here), None
    without --workers; ConfigError for the cluster's options without it."""
    given = [
        flag
        for flag, value in (
            ("--master-bind-host", cluster.master_bind_host),
            ("--master-port", cluster.master_port),
            ("--connect-timeout", cluster.connect_timeout),
        )
        if value is not None
    ]
    if not cluster.workers:
        if given:
            raise ConfigError(f"{given[0]} needs --workers")
        return None
    bind = cluster.master_bind_host
    host = (LOCALHOST if bind is None else bind).strip()
    if not host:
        raise ConfigError("--master-bind-host: empty address")
    port = MASTER_PORT if cluster.master_port is None else cluster.master_port
    if not port:
        raise ConfigError("--master-port: the workers need a port named, not 0")
    check_port_free(host, port)
    token_from_env()  # checked before any work
    return host, port


def refuse_cooperation(
    config: ScaleConfig, options: storages.StorageOptions, target: str | None
) -> None:
    """ConfigError when the clients cannot run as asked: greenlets on a
    driver that blocks gevent, workers on a storage whose clients open
    files of this machine."""
    for name in config.storages:
        if name == "target":
            assert target is not None
            relstorage, driver = concurrency.target_driver(target)
            what = "the target"
        else:
            factory = storages.get(name, options)
            driver = concurrency.factory_driver(factory)
            relstorage, what = driver is not None, name
            if config.workers and not factory.starts_server:
                raise ConfigError(
                    f"--workers: {name}'s clients open files of this machine; "
                    "workers on other hosts cannot reach them"
                )
        if config.concurrency == "greenlets" and relstorage:
            refusal = concurrency.greenlet_refusal(driver)
            if refusal is not None:
                raise ConfigError(f"--concurrency greenlets, {what}: {refusal}")


def cluster_storage_options(
    config: ScaleConfig, options: storages.StorageOptions, host: str
) -> storages.StorageOptions:
    """The servers this run starts listen where the workers reach this host
    (said on stderr when that is not loopback: anyone can reach them)."""
    from storages.options import ListenOptions
    from storages.ports import is_loopback

    if any(n != "target" for n in config.storages) and not is_loopback(host):
        print(
            f"vfab-bench scale: the servers this run starts listen on {host}, "
            "not loopback: anyone who reaches them can read and change the "
            "database, unauthenticated",
            file=sys.stderr,
        )
    return options.replace(ListenOptions(host, 0))


@contextlib.contextmanager
def fleets_of(
    cluster: ClusterOptions, config: ScaleConfig, quiet: bool = False
) -> Iterator[Any]:
    """Where the points' clients run: None (this machine's processes), or
    a Cluster of --workers locust workers, waited for (at most
    --connect-timeout) and sent away at the end; *quiet*: only the token
    is said."""
    if not config.workers:
        yield None
        return
    from scenarios.clients.remote.cluster import Cluster

    def tell(line: str) -> None:
        print(f"vfab-bench scale: {line}", file=sys.stderr, flush=True)

    def say(line: str) -> None:
        if not quiet:
            tell(line)

    address = cluster_address(cluster)
    assert address is not None
    timeout = cluster.connect_timeout or CONNECT_TIMEOUT_S
    # A token each run, unless the operator gave one: no worker joins
    # without it, so it is shown even under -q (docs/cluster.md).
    operators = token_from_env()
    token = operators or new_token()
    shown = None if operators else tell
    with Cluster(*address, config.workers, timeout, say, token, shown) as fleet:
        per = concurrency.per_process(
            config.concurrency, config.clients_per_process, max(config.clients)
        )
        fleet.check_memory(max(config.clients), per)
        try:
            yield fleet
        finally:
            fleet.end()
