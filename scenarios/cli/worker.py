"""vfab-bench worker: one client host of a distributed `vfab-bench scale`.

A locust worker (scenarios.clients.remote.worker.serve): it connects to the master that
`scale --workers N --master-bind-host IP` runs, and for each point starts
the client processes the master gives it, as the local scale would.  It
ends when the master's run ends (exit 0), or after a bound: no master
answered (--connect-timeout, exit 2), the master went silent for locust's
heartbeat timeout mid-run (exit 3: its points are not fully checked).
"""

from __future__ import annotations

import argparse
import sys

from scenarios.argtypes import positive_float
from scenarios.clients.remote.seal import TOKEN_ENV, check_token, token_from_env
from scenarios.errors import EXIT_INVARIANTS, EXIT_OK, ConfigError
from scenarios.results.formatter import plural
from scenarios.scale.config import CONNECT_TIMEOUT_S, MASTER_PORT
from storages.ports import LOCALHOST
from storages.zeo import port_number


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "worker",
        help="a client host of `vfab-bench scale --workers N` (a locust worker)",
        description="Connect to the master of a distributed scale run and run "
        "the clients it places here, point by point (docs/cluster.md).  Exit "
        f"0 when its run ends, 2 when no master answers, {EXIT_INVARIANTS} when "
        "the master is lost mid-run.",
    )
    p.add_argument(
        "--master-host",
        default=LOCALHOST,
        metavar="ADDRESS",
        help=f"the master's --master-bind-host (default: {LOCALHOST})",
    )
    p.add_argument(
        "--master-port",
        type=port_number,
        default=MASTER_PORT,
        metavar="N",
        help=f"the master's --master-port (default: {MASTER_PORT}, locust's)",
    )
    p.add_argument(
        "--connect-timeout",
        type=positive_float,
        default=CONNECT_TIMEOUT_S,
        metavar="SECONDS",
        help="how long to wait for the master (default: 60)",
    )
    p.add_argument(
        "--token",
        metavar="TOKEN",
        help="the token the master shows when it waits for its workers "
        f"(default: ${TOKEN_ENV}, which other users of this host cannot read "
        "from its process list); frames not sealed with it are ignored",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="say nothing but errors")
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    host = args.master_host.strip()
    if not host:
        raise ConfigError("--master-host: empty address")
    if not args.master_port:
        raise ConfigError("--master-port: the master's port, not 0")
    token = (
        token_from_env() if args.token is None else check_token(args.token, "--token")
    )
    if token is None:
        raise ConfigError(
            f"--token: the token `vfab-bench scale --workers N` shows (or ${TOKEN_ENV})"
        )
    # locust patches this process with gevent on import: only now.
    from scenarios.clients.remote.worker import serve

    def say(line: str) -> None:
        if not args.quiet:
            print(f"vfab-bench worker: {line}", file=sys.stderr, flush=True)

    end = serve(host, args.master_port, token, args.connect_timeout, say)
    done = f"{plural(end.points, 'point')} done here"
    if end.master_silent_s is not None:
        print(
            f"vfab-bench worker: the master at {host}:{args.master_port} was "
            f"silent for {end.master_silent_s:g} s: lost mid-run ({done}); its "
            "run is not fully checked",
            file=sys.stderr,
        )
        return EXIT_INVARIANTS
    say(f"the master's run ended ({done})")
    return EXIT_OK
