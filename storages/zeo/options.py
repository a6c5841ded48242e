"""The options of the zeo storages and their parsing.

ZEOOptions is the option group of zeo and zeo+bdb; add_zeo_address_option()
is the one --zeo-address declaration every command taking it uses (the
storages' options, census, status, the load options of zeoloop, locust
and scale); parse_address() and address_type() read HOST:PORT,
port_number() a port; check_reachable() says, as a StorageError, that
nothing answers at an address.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any, ClassVar

import storages.ports as ports
from storages.base import ROOT_KEY, OptionGroup, StorageError
from storages.options import add_size_option, at_least

#: The port of a zeo:// URI that names none (zodburi's default).
ZEO_URI_PORT = 9991


def uri_address(uri: str) -> tuple[str, int] | None:
    """(host, port) of a zeo:// URI over TCP; None for any other URI or a
    Unix socket; StorageError for a bad port."""
    if not uri.startswith("zeo://"):
        return None
    host, port = ports.uri_address(uri, ZEO_URI_PORT)
    return None if host is None or port is None else (host, port)


def address_uri(address: tuple[str, int]) -> str:
    """The zeo:// URI of a server's (host, port) (an IPv6 host in
    brackets: zeo://[::1]:8100)."""
    return f"zeo://{ports.host_port(*address)}"


def parse_address(text: str) -> tuple[str, int]:
    """'HOST:PORT' or '[IPV6]:PORT' -> (host, port); StorageError for
    anything else."""
    parts = ports.split_host_port(text.strip())
    host, port = parts if parts is not None else ("", "")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise StorageError(
            f"bad ZEO address {text!r}: expected HOST:PORT ([IPV6]:PORT)"
        )
    return host, int(port)


def address_type(text: str) -> tuple[str, int]:
    """An argparse type: parse_address, its error as argparse's."""
    try:
        return parse_address(text)
    except StorageError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_zeo_address_option(
    parser: Any,
    *,
    default: str | None = None,
    help: str | None = None,
    parse: bool = True,
    show_default: bool = True,
) -> None:
    """--zeo-address HOST:PORT on *parser* (an argparse parser or group, or
    locust's): the one declaration every command taking it uses.  With
    *parse* the value is a (host, port) pair, else the text as typed (for
    parsers whose values also come from a form)."""
    kwargs: dict[str, Any] = {"type": address_type} if parse else {}
    if default is not None and show_default:
        help = f"{help} (default: {default})" if help else f"default: {default}"
    parser.add_argument(
        "--zeo-address",
        default=default,
        metavar="HOST:PORT",
        help=help or "a running ZEO server",
        **kwargs,
    )


#: An argparse type: a TCP port, or 0 for a free one.
port_number = at_least(0, 65535)


@dataclasses.dataclass(frozen=True)
class ZEOOptions(OptionGroup):
    """Options of the ZEO storages (zeo, zeo+bdb).

    zeo_address: (host, port) of an existing ZEO server to use instead of
        starting one (None: start runzeo on 127.0.0.1: once per batch of
        trials in a run, see ZEOPool).
    zeo_port: port for the runzeo the suite starts (0: a free port).
    zeo_cache_size: ZEO client cache, in bytes (None: ZEO's default, 20 MB).
    """

    #: An address as "HOST:PORT".
    JSON_AS: ClassVar[dict[str, Any]] = {
        "zeo_address": lambda a: None if a is None else ports.host_port(*a)
    }

    zeo_address: tuple[str, int] | None = None
    zeo_port: int = 0
    zeo_cache_size: int | None = None

    @classmethod
    def add_arguments(cls, group: argparse._ArgumentGroup) -> None:
        add_zeo_address_option(
            group,
            help="use this running ZEO server instead of starting runzeo; "
            f"the suite writes only under root[{ROOT_KEY!r}]",
        )
        group.add_argument(
            "--zeo-port",
            type=port_number,
            default=0,
            metavar="N",
            help="port for the runzeo the suite starts on 127.0.0.1 "
            "(default: a free port)",
        )
        add_size_option(
            group,
            "--zeo-cache-size",
            "BYTES",
            "ZEO client cache size in bytes (default: ZEO's, 20 MB)",
        )


def check_reachable(address: tuple[str, int], timeout: float = 3.0) -> None:
    """StorageError unless a TCP connection to *address* succeeds."""
    ports.check_reachable(*address, "ZEO server", timeout)
