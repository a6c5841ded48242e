"""Addresses and TCP ports for the servers the suite starts (runzeo,
PostgreSQL, MariaDB): all on 127.0.0.1 unless the user names another
address, IPv4 or IPv6 ("::1"; "[::1]:8100" where a port follows)."""

from __future__ import annotations

import errno
import ipaddress
import socket

from storages.base import StorageError

LOCALHOST = "127.0.0.1"


def host_port(host: str, port: int | str) -> str:
    """HOST:PORT as a URI, a ZConfig file or a message writes it: an IPv6
    address in brackets ("[::1]:8100")."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def split_host_port(text: str) -> tuple[str, str] | None:
    """'HOST:PORT' or '[IPV6]:PORT' -> (host, port text) as typed, the
    brackets removed; None without a port after the last colon.  An IPv6
    address without brackets ("::1:8100") is read as host "::1" and port
    8100, as ZConfig does not: write the brackets."""
    if text.startswith("["):
        host, close, rest = text[1:].partition("]")
        if not close or not rest.startswith(":"):
            return None
        return host, rest[1:]
    host, sep, port = text.rpartition(":")
    return (host, port) if sep else None


def _bind_address(host: str, port: int) -> tuple[int, tuple[object, ...]]:
    """(address family, socket address) *host* binds as; StorageError,
    one line, when the name does not resolve."""
    try:
        infos = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except (socket.gaierror, UnicodeError) as e:
        reason = getattr(e, "strerror", None) or str(e)
        raise StorageError(
            f"cannot listen on {host}: the name does not resolve ({reason})"
        ) from None
    family, _, _, _, address = infos[0]
    return family, address


def free_port(host: str = LOCALHOST) -> int:
    """A port the kernel says is free now on *host* (runzeo reports the
    address it was given, not the one the kernel chose for port 0, so pick
    one first)."""
    family, address = _bind_address(host, 0)
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind(address)
        return int(s.getsockname()[1])


def check_port_free(host: str, port: int) -> None:
    """StorageError (one line) unless (host, port) can be bound now: the
    name resolves, the address is this machine's, the port is free (port
    0: any free one, so only the address is checked)."""
    family, address = _bind_address(host, port)
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(address)
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                raise StorageError(f"port {port} on {host} is already in use") from None
            raise StorageError(
                f"cannot listen on {host_port(host, port)}: {e.strerror}"
            ) from None


def is_loopback(host: str) -> bool:
    """Whether every address *host* names is a loopback one (127.0.0.0/8,
    ::1, localhost): a server there is reached from this machine only."""
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        return False
    addresses = {info[4][0] for info in infos}
    return bool(addresses) and all(
        ipaddress.ip_address(str(a).partition("%")[0]).is_loopback for a in addresses
    )


def exposed(host: str, port: int | str) -> str | None:
    """The warning a server listening on *host* deserves, or None on
    loopback: every database the suite serves takes any client."""
    if is_loopback(host):
        return None
    return (
        f"listening on {host_port(host, port)}, not loopback: anyone who "
        "reaches it can read and change the database, unauthenticated"
    )


def uri_address(uri: str, default_port: int) -> tuple[str | None, int | None]:
    """(host, port) a server URI (``SCHEME://[USER@]HOST[:PORT]/...``, an
    IPv6 host in brackets) names: *default_port* when it names no port;
    (None, None) without a host (a Unix socket, left to the client).
    StorageError for a bad port."""
    from urllib.parse import urlsplit

    scheme = uri.partition("://")[0]
    try:
        where = urlsplit("http" + uri[len(scheme) :])
        port = where.port
    except ValueError:
        raise StorageError(f"bad port in {uri!r}") from None
    if not where.hostname:
        return None, port
    return where.hostname, port or default_port


def check_reachable(host: str, port: int, server: str, timeout: float = 3.0) -> None:
    """StorageError ("cannot reach *server* at HOST:PORT: why") unless a
    TCP connection to (*host*, *port*) opens within *timeout* seconds."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except OSError as e:
        reason = e.strerror or str(e) or type(e).__name__
        raise StorageError(
            f"cannot reach {server} at {host_port(host, port)}: {reason}"
        ) from None
