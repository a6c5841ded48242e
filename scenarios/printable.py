"""Text on its way to a terminal or a text file, whatever it holds: control
characters from a file shown escaped (a storage name must not clear the
screen), and characters a stream cannot encode replaced instead of ending
the command (an ASCII stdout, a file name that is not UTF-8).  Stdlib
only: the early entry point (scenarios/cli/early.py) uses it.
"""

from __future__ import annotations

import codecs
import io
import os
import select
import sys

#: The codec error handler of vfab-bench's streams and text files:
#: replace() below.
ERRORS = "vfab-replace"

#: What an ASCII stream shows for the characters the views print.
ASCII: dict[str, str] = {
    "\u00b5": "u",  # µs
    "\u03bc": "u",
    "\u00b1": "+/-",
    "\u00d7": "x",
    "\u2212": "-",
    "\u2013": "-",
    "\u2014": "--",
    "\u2026": "...",
    "\u2192": "->",
    "\u2190": "<-",
    "\u2191": "^",
    "\u2193": "v",
    "\u25b2": "^",
    "\u25bc": "v",
    "\u2248": "~",
    "\u2264": "<=",
    "\u2265": ">=",
    "\u2260": "!=",
    "\u00b7": ".",
    "\u2022": "*",
    "\u2018": "'",
    "\u2019": "'",
    "\u201c": '"',
    "\u201d": '"',
    "\u00a0": " ",
}


def _escaped(char: str) -> str:
    """*char* as a visible escape: \\x1b, \\u202e; a byte a file name held
    that was not UTF-8 (decoded by Python as a lone surrogate, PEP 383) as
    that byte, \\xff."""
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:
        return f"\\x{code - 0xDC00:02x}"
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def replace(error: UnicodeError) -> tuple[str, int]:
    """The codec error handler ERRORS: each character a stream cannot encode
    as its ASCII stand-in (µ: u, ±: +/-) or a visible escape."""
    if not isinstance(error, UnicodeEncodeError):
        raise error
    bad = error.object[error.start : error.end]
    return "".join(ASCII.get(c) or _escaped(c) for c in bad), error.end


codecs.register_error(ERRORS, replace)

#: Control characters (C0 but newline and tab, DEL, C1) and the Unicode
#: bidirectional overrides and isolates, which reorder what a terminal
#: shows: each shown as its escape.
_CONTROLS = {
    code: _escaped(chr(code))
    for code in (
        *range(0x00, 0x20),
        *range(0x7F, 0xA0),
        *range(0x202A, 0x202F),
        *range(0x2066, 0x206A),
    )
    if chr(code) not in "\n\t"
}


def shown(text: str) -> str:
    """*text* with every control character visible (\\x1b, \\r, \\u202e)
    instead of acting on the terminal; newlines and tabs kept."""
    return text.translate(_CONTROLS)


def prepare_streams() -> None:
    """Stdout and stderr replace what they cannot encode (ERRORS) instead
    of raising UnicodeEncodeError: an ASCII locale (LC_ALL=C,
    PYTHONIOENCODING=ascii) gets "us" for "µs", and a result is never lost
    to a character."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors=ERRORS)


def stdout_closed() -> bool:
    """Stdout is a pipe whose reading end is closed (`vfab-bench ... | true`,
    a pager quit early): writing to it raises BrokenPipeError."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a file (a test's capture)
        return False
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    return any(events & select.POLLERR for _, events in poller.poll(0))


def silence_stdout() -> None:
    """What is left to print goes nowhere: stdout on /dev/null, so that
    neither the rest of the command nor Python's flush at exit meets the
    closed pipe again (Python's docs on SIGPIPE)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def reserve_standard_streams() -> None:
    """A command started with stdout or stderr closed (`>&-`): Python makes
    sys.stdout None, and the first file the command opens would take the
    descriptor, so that a child's output or a stray write lands in a result
    file.  The closed descriptor is put on /dev/null and the stream made
    again: what the command prints goes nowhere, as it would have."""
    for fd, name in ((1, "stdout"), (2, "stderr")):
        try:
            os.fstat(fd)
            continue
        except OSError:
            pass
        devnull = os.open(os.devnull, os.O_WRONLY)
        if devnull != fd:
            os.dup2(devnull, fd)
            os.close(devnull)
        if getattr(sys, name) is None:
            setattr(sys, name, open(fd, "w", closefd=False))  # noqa: SIM115
