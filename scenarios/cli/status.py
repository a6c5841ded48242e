"""vfab-bench status: a ZEO server's counters, e.g. its client connections."""

from __future__ import annotations

import argparse
import json

from scenarios.errors import EXIT_OK
from scenarios.load.mix import DEFAULT_ADDRESS
from scenarios.load.zeo_status import server_status
from storages.zeo import add_zeo_address_option


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "status",
        help="print a ZEO server's counters (clients, commits, conflicts...)",
        description="Connect briefly to a ZEO server and print "
        "ClientStorage.server_status(): 'clients' is the number of other "
        "client connections ('connections' counts this one too).",
    )
    add_zeo_address_option(p, default=DEFAULT_ADDRESS)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    status = server_status(args.zeo_address)
    if args.json:
        print(json.dumps(status, sort_keys=True, default=str))
    else:
        for key in sorted(status):
            print(f"{key:24} {status[key]}")
    return EXIT_OK
