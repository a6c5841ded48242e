"""Signals for the command line: a commit in flight finishes first, and
SIGTERM and SIGHUP clean up exactly as Ctrl-C does.

Process-wide signal handling belongs to the program, not to a library:
storages only offer a neutral hook (storages.base.commit_guard, around
every ZODBStore commit), and main() installs the deferring one here.
SIGINT raises KeyboardInterrupt; SIGTERM and SIGHUP raise Terminated, a
KeyboardInterrupt that remembers its signal, so that every `finally` and
context manager that cleans up after Ctrl-C (temporary directories, servers
the suite started) runs for them too, and main() exits 128 + the signal.
"""

from __future__ import annotations

import _thread
import contextlib
import logging
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any, NoReturn

import storages.base

#: The signals that stop a command, each with the cleanup of Ctrl-C.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised where Ctrl-C would be."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def signal_of(interrupt: KeyboardInterrupt) -> int:
    """The signal behind a KeyboardInterrupt (SIGINT unless Terminated)."""
    return getattr(interrupt, "signum", signal.SIGINT)


class _Interrupts:
    """Ctrl-C deferred while a commit is in flight.

    A KeyboardInterrupt inside two-phase commit leaves ZEO's client with a
    half-sent transaction (and asyncio tracebacks on stderr).  Once
    defer_interrupts() has installed the handler (and made guarded() the
    storages' commit_guard), SIGINT during ZODBStore.commit() is held until
    the commit returns, then raised.

    Python swallows what a gc callback, a weakref callback or __del__ raises
    (and reports it to sys.unraisablehook): a KeyboardInterrupt raised while
    one of those runs is asked for again, from another thread, so that it
    lands in ordinary code.  Once Ctrl-C has been raised (*raised*), what
    ZODB, ZEO and asyncio log with a traceback while the interrupted loads
    unwind ("Couldn't load state", "exception was never retrieved") is noise,
    and the last-resort log handler drops it.
    """

    critical = 0
    #: The signal held while a commit finishes (0: none).
    pending = 0
    raised = False
    #: The signal last raised (0: none), for swallowed().
    raised_signal = 0

    @classmethod
    def handler(cls, signum: int, frame: object) -> None:
        if cls.critical:
            cls.pending = cls.pending or signum
        else:
            cls.interrupt(signum)

    @classmethod
    def interrupt(cls, signum: int) -> NoReturn:
        cls.raised = True
        cls.raised_signal = signum
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise Terminated(signum)

    @classmethod
    def leave(cls) -> None:
        cls.critical -= 1
        if cls.pending and not cls.critical:
            signum, cls.pending = cls.pending, 0
            cls.interrupt(signum)

    @classmethod
    @contextlib.contextmanager
    def guarded(cls) -> Iterator[None]:
        """The critical section a commit runs in."""
        cls.critical += 1
        try:
            yield
        finally:
            cls.leave()

    @classmethod
    def swallowed(cls) -> None:
        """Raise again a signal already raised, when the code that should
        have been unwinding from it goes on normally instead: ZODB's
        FileStorage.close() catches everything around saving its index, so
        a Ctrl-C landing there was lost and the run went on to its end.
        Called where a database has closed normally (storages.base.
        after_close), never while an exception is being handled."""
        if cls.raised_signal and sys.exc_info()[1] is None:
            cls.interrupt(cls.raised_signal)

    @classmethod
    def forget(cls) -> None:
        """A new command: nothing raised, held or in a commit."""
        cls.critical = cls.pending = cls.raised_signal = 0
        cls.raised = False

    @staticmethod
    def unraisable(unraisable: Any) -> None:
        exc_type = unraisable.exc_type
        if exc_type is not None and issubclass(exc_type, KeyboardInterrupt):
            # Not from here: interrupt_main() would run the handler at once,
            # still inside the callback that swallows it.
            signum = getattr(unraisable.exc_value, "signum", signal.SIGINT)
            try:
                threading.Timer(0.001, _thread.interrupt_main, (signum,)).start()
            except RuntimeError:
                # "can't create new thread at interpreter shutdown": Ctrl-C
                # landed in a __del__ while the process exits; it is exiting.
                pass
            return
        sys.__unraisablehook__(unraisable)


def quiet_after_interrupt(record: Any) -> bool:
    """A logging filter: no record with a traceback once Ctrl-C was raised."""
    return not (_Interrupts.raised and getattr(record, "exc_info", None))


def defer_interrupts() -> None:
    """Install the SIGINT, SIGTERM and SIGHUP handler that lets a commit
    finish before the signal takes effect (call from the main thread), make
    sure no callback swallows it, and drop the tracebacks logged by the work
    an interrupt cut short."""
    _Interrupts.forget()
    for signum in STOP_SIGNALS:
        signal.signal(signum, _Interrupts.handler)
    storages.base.commit_guard = _Interrupts.guarded
    storages.base.after_close = _Interrupts.swallowed
    sys.unraisablehook = _Interrupts.unraisable
    last_resort = logging.lastResort
    if last_resort is not None and quiet_after_interrupt not in last_resort.filters:
        last_resort.addFilter(quiet_after_interrupt)


def last_signal() -> int:
    """The stop signal this command last raised (SIGINT if none): what a
    command that catches the interrupt itself (scale, zeoloop) exits by."""
    return _Interrupts.raised_signal or signal.SIGINT


def exit_status(signum: int) -> int:
    """128 + *signum*: 130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP."""
    return 128 + signum


def stop_line(signum: int) -> str:
    """What a stopped command says last: "vfab-bench: interrupted" for
    Ctrl-C, "vfab-bench: terminated (SIGTERM)" for the others."""
    if signum == signal.SIGINT:
        return "vfab-bench: interrupted"
    return f"vfab-bench: terminated ({signal.Signals(signum).name})"


def forget_interrupts() -> None:
    """The command is over: a signal it raised must not be raised again in
    whatever this process runs next (tests run many commands in one)."""
    _Interrupts.forget()
