"""An exception as one line for the user: the one helper every module uses
(storages.named, storages.relstorage, scenarios.errors re-exports it)."""

from __future__ import annotations

from typing import Any


def first_line(text: object) -> str:
    """The first line of str(*text*) that is not blank, stripped ("" if
    there is none)."""
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    return lines[0] if lines else ""


def one_line(error: BaseException, with_type: bool = True) -> str:
    """*error* as one line: an OSError's file and reason; a database
    driver's message (pg8000's {"M": ...}, MySQL drivers' (code, message));
    else the first line of its message; after its type name unless not
    *with_type* (the type alone when there is no message)."""
    if isinstance(error, OSError):
        reason = error.strerror or first_line(error) or type(error).__name__
        names = [str(n) for n in (error.filename, error.filename2) if n]
        return f"{' -> '.join(names)}: {reason}" if names else reason
    args: tuple[Any, ...] = getattr(error, "args", ())
    if args and isinstance(args[0], dict):  # pg8000
        message = first_line(args[0].get("M", args[0]))
    elif len(args) >= 2 and isinstance(args[0], int):  # MySQLdb, PyMySQL
        message = first_line(f"({args[0]}) {args[1]}")
    else:
        message = first_line(error)
    kind = type(error).__name__
    if not with_type:
        return message or kind
    return f"{kind}: {message}" if message else kind
