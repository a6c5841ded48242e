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
