"""TCP ports for the servers the suite starts (runzeo, PostgreSQL, MariaDB):
all on 127.0.0.1 unless the user names another address."""

from __future__ import annotations

import errno
import socket

from storages.base import StorageError

LOCALHOST = "127.0.0.1"


def free_port(host: str = LOCALHOST) -> int:
    """A port the kernel says is free now (runzeo reports the address it was
    given, not the one the kernel chose for port 0, so pick one first)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def check_port_free(host: str, port: int) -> None:
    """StorageError unless (host, port) can be bound now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                raise StorageError(f"port {port} on {host} is already in use") from None
            raise StorageError(
                f"cannot listen on {host}:{port}: {e.strerror}"
            ) from None


def uri_address(uri: str, default_port: int) -> tuple[str | None, int | None]:
    """(host, port) a server URI (``SCHEME://[USER@]HOST[:PORT]/...``)
    names: *default_port* when it names no port; (None, None) without a
    host (a Unix socket, left to the client).  StorageError for a bad port."""
    from urllib.parse import urlsplit

    scheme = uri.partition("://")[0]
    where = urlsplit("http" + uri[len(scheme) :])
    try:
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
            f"cannot reach {server} at {host}:{port}: {reason}"
        ) from None
