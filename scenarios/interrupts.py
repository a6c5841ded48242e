"""Signals for the command line: a commit in flight finishes first, and
SIGTERM, SIGHUP and SIGXCPU (a CPU-time limit reached) clean up exactly as
Ctrl-C does (Terminated, a KeyboardInterrupt that remembers its signal),
then exit 128 + the signal; Linux repeats SIGXCPU every CPU second past the
soft limit: the first one counts (docs/internals.md).
"""

from __future__ import annotations

import _thread
import contextlib
import logging
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

from storages.zodbstore import register_synchronizer

#: The signals that stop a command, each with the cleanup of Ctrl-C.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGXCPU)


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
    defer_interrupts() has installed the handler (and registered
    CompletionGuard on every store's transaction manager), SIGINT during a
    store's commit or abort is held until the storage has finished it, then
    raised.

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
    #: The signal last raised (0: none), for last_signal().
    raised_signal = 0
    #: SIGXCPU came (once is enough: Linux repeats it).
    cpu_limit = False
    #: unraisable() is asking for a stop again (see there).
    asking = False
    #: The stop handed to gevent's hub for the main greenlet and not yet
    #: thrown there (None: none; see _to_main_greenlet, undelivered()),
    #: dropped by forget(): a hand-over for one command is not thrown in
    #: the next.
    handed: KeyboardInterrupt | None = None

    @classmethod
    def handler(cls, signum: int, frame: object) -> None:
        if signum == signal.SIGXCPU:
            if cls.cpu_limit:
                return  # repeated every CPU second: the cleanup is under way
            cls.cpu_limit = True
        if cls.asking:
            return  # in the hook that asks for the stop again: it comes after
        if cls.critical:
            cls.pending = cls.pending or signum
        elif not _to_main_greenlet(cls.stop(signum), from_signal=True):
            cls.interrupt(signum)

    @classmethod
    def stop(cls, signum: int) -> KeyboardInterrupt:
        """Note *signum* as raised; the exception that raises it."""
        cls.raised = True
        cls.raised_signal = signum
        return KeyboardInterrupt() if signum == signal.SIGINT else Terminated(signum)

    @classmethod
    def interrupt(cls, signum: int) -> NoReturn:
        raise cls.stop(signum)

    @classmethod
    def leave(cls) -> None:
        cls.critical -= 1
        if cls.pending and not cls.critical:
            signum, cls.pending = cls.pending, 0
            if not _to_main_greenlet(cls.stop(signum)):
                cls.interrupt(signum)

    @classmethod
    def forget(cls) -> None:
        """A new command: nothing raised, held or in a commit."""
        cls.critical = cls.pending = cls.raised_signal = 0
        cls.handed = None
        cls.raised = cls.cpu_limit = cls.asking = False

    @staticmethod
    def ask_again(signum: int) -> None:
        """From another thread: *signum* to the main thread once the hook
        that asked for it has returned."""
        while _Interrupts.asking:
            time.sleep(0.001)
        time.sleep(0.001)  # the hook's own return, and its caller's
        _thread.interrupt_main(signal.Signals(signum))

    @staticmethod
    def unraisable(unraisable: Any) -> None:
        exc_type = unraisable.exc_type
        if exc_type is not None and issubclass(exc_type, KeyboardInterrupt):
            # Not from here: interrupt_main() would run the handler at once,
            # still inside the callback that swallows it.
            # While this hook starts the thread that asks (Thread.start()
            # waits for it), the handler holds back: a stop raised here would
            # be swallowed again ("Exception ignored in sys.unraisablehook").
            signum = getattr(unraisable.exc_value, "signum", signal.SIGINT)
            _Interrupts.asking = True
            try:
                threading.Thread(
                    target=_Interrupts.ask_again, args=(signum,), daemon=True
                ).start()
            except RuntimeError:
                # "can't create new thread at interpreter shutdown": Ctrl-C
                # landed in a __del__ while the process exits; it is exiting.
                pass
            finally:
                _Interrupts.asking = False
            return
        sys.__unraisablehook__(unraisable)


class CompletionGuard:
    """A transaction synchronizer (transaction.interfaces.ISynchronizer):
    from beforeCompletion to afterCompletion, the storage's two-phase commit
    or its abort, a stop signal is held, then raised from afterCompletion.

    Registered on a store's transaction manager before its connection
    (storages.zodbstore.register_synchronizer), so it is called first both
    times: a signal is raised once the storage has finished (tpc_finish or
    tpc_abort returned), and no other synchronizer that fails before it
    (a connection's sync with a server that went away) can keep the section
    open.  What the transaction would still do after it (the connection's
    invalidations, freeing the transaction) is done by the abort that
    every store's close begins with."""

    # ISynchronizer, in its own (camelCase) names.
    def newTransaction(self, transaction: Any) -> None:
        pass

    def beforeCompletion(self, transaction: Any) -> None:
        _Interrupts.critical += 1

    def afterCompletion(self, transaction: Any) -> None:
        _Interrupts.leave()


#: The one guard every store registers (a process holds one critical count).
COMPLETION_GUARD = CompletionGuard()


def _to_main_greenlet(stop: KeyboardInterrupt, from_signal: bool = False) -> bool:
    """In a process gevent patched (a locust master or worker, scale's
    greenlets), have the hub throw *stop* into the main greenlet; whether
    it was handed over (False: raise it here, as without gevent).

    Python runs a signal handler in the main thread, and under gevent every
    "thread" is a greenlet of it: ZEO's networking thread among them.  A
    stop raised there ends ZEO's event loop ("Event loop stopped before
    Future completed", a ClientDisconnected in the command) and never
    reaches the command.  Nor may it be raised in the main greenlet
    *from_signal*, wherever that was: gevent makes threading's locks the
    pure-Python _RLock, and a stop raised between its inner lock's acquire
    and the owner's assignment (or its release's two steps) leaves the lock
    taken by no one.  logging's module lock was left so by a SIGINT to
    `scale --workers` (the exit then blocked for ever in logging.shutdown,
    or failed with "greenlet is being finalized"): 1 run in 10, load 5 to 8.
    The hub throws it as gevent.kill() does, at the main greenlet's next
    wait; a command that ends without waiting again exits by it all the
    same (undelivered()).  A stop held through a commit (leave()) is raised
    where the commit ended, in ordinary code: there it is raised at once.
    """
    greenlet = sys.modules.get("greenlet")
    gevent = sys.modules.get("gevent")
    if greenlet is None or gevent is None:
        return False
    current = greenlet.getcurrent()
    main = current
    while main.parent is not None:
        main = main.parent
    if current is main and not (from_signal and _gevent_patched_threading()):
        return False  # the main greenlet, in ordinary code: raise here
    hub_local = sys.modules.get("gevent._hub_local")  # no import in a handler
    hub = hub_local.get_hub_if_exists() if hub_local is not None else None
    if hub is None:
        return False  # nothing waited on gevent yet (making a hub here fails)
    _Interrupts.handed = stop
    _wake_up(hub, main).send()
    return True


def _gevent_patched_threading() -> bool:
    monkey = sys.modules.get("gevent.monkey")
    return monkey is not None and bool(monkey.is_module_patched("threading"))


#: The hub's async watcher that throws a handed stop into the main greenlet
#: (one per hub; made on the first stop).
_WAKE_UPS: dict[int, Any] = {}


def _wake_up(hub: Any, main: Any) -> Any:
    """The hub's async watcher (libev's ev_async) whose callback throws the
    handed stop into *main*.  Sending it is safe from a signal handler that
    interrupted the hub anywhere; gevent's run_callback is not (its queue
    of callbacks is Python-visible state the handler may have cut in two:
    a stop handed that way was lost once in CI, the command never told)."""
    watcher = _WAKE_UPS.get(id(hub))
    if watcher is None:
        watcher = hub.loop.async_()
        watcher.start(_throw, main)
        watcher.ref = False  # a stop to come keeps no loop running
        _WAKE_UPS[id(hub)] = watcher
    return watcher


def _throw(main: Any) -> None:
    """The watcher's callback, in the hub: the handed stop into the main
    greenlet, where it waits."""
    stop, _Interrupts.handed = _Interrupts.handed, None
    if stop is not None:
        main.throw(stop)


def undelivered() -> int:
    """A stop signal handed to gevent's hub and never thrown (0: none): the
    command ended without waiting on the hub again; it exits by the signal
    all the same."""
    stop = _Interrupts.handed
    return 0 if stop is None else signal_of(stop)


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
    register_synchronizer(COMPLETION_GUARD)
    sys.unraisablehook = _Interrupts.unraisable
    last_resort = logging.lastResort
    if last_resort is not None and quiet_after_interrupt not in last_resort.filters:
        last_resort.addFilter(quiet_after_interrupt)


@contextlib.contextmanager
def held() -> Iterator[None]:
    """Stop signals held for the block, raised at its end: for steps that
    a signal must not cut in two (making or removing a directory)."""
    _Interrupts.critical += 1
    try:
        yield
    finally:
        _Interrupts.leave()


def remove_tree(path: Path) -> None:
    """Remove the directory *path* and what it holds, a stop signal held
    until it is gone: a signal raised mid-removal left the directory behind,
    emptied (a sweep stopped by SIGINT, 1 run in 3)."""
    with held():
        shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def scratch_directory(prefix: str, directory: Path | None = None) -> Iterator[Path]:
    """A new directory (tempfile.mkdtemp) for the block, removed after it
    whatever happens: stop signals are held while it is made (one raised
    between its making and the block left it behind) and removed."""
    _Interrupts.critical += 1
    try:
        path = Path(tempfile.mkdtemp(prefix=prefix, dir=directory))
    except BaseException:
        _Interrupts.leave()
        raise
    try:
        _Interrupts.leave()  # a signal held meanwhile is raised here
        yield path
    finally:
        remove_tree(path)


def stopped() -> bool:
    """Whether this command raised a stop signal (a caller may have caught
    it and carried on: scale's check, zeoloop's)."""
    return bool(_Interrupts.raised_signal)


def last_signal() -> int:
    """The stop signal this command last raised (SIGINT if none): what a
    command that catches the interrupt itself (scale, zeoloop) exits by."""
    return _Interrupts.raised_signal or signal.SIGINT


def interrupt_again() -> KeyboardInterrupt:
    """The stop this command last raised, to raise again where a caller
    turned it into something else (scale's ScaleInterrupted) and the
    command must still stop: KeyboardInterrupt for Ctrl-C, Terminated for
    the others, so that main() exits by the signal that came."""
    signum = last_signal()
    return KeyboardInterrupt() if signum == signal.SIGINT else Terminated(signum)


def exit_status(signum: int) -> int:
    """128 + *signum*: 130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP."""
    return 128 + signum


def stop_line(signum: int) -> str:
    """What a stopped command says last: "vfab-bench: interrupted" for
    Ctrl-C, "vfab-bench: terminated (SIGTERM)" for the others."""
    if signum == signal.SIGINT:
        return "vfab-bench: interrupted"
    if signum == signal.SIGXCPU:
        return "vfab-bench: terminated (SIGXCPU: the CPU-time limit was reached)"
    return f"vfab-bench: terminated ({signal.Signals(signum).name})"


def forget_interrupts() -> None:
    """The command is over: a signal it raised must not be raised again in
    whatever this process runs next (tests run many commands in one)."""
    _Interrupts.forget()
