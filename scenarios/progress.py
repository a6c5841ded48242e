"""What a long command says while it runs (run, scale, sweep, verify,
populate): a live bar on a terminal, a line per step elsewhere, both on
stderr.  The count is of the work done, out of a total planned at the
start; the share done never goes back; the ETA follows the work: it may
rise when the work runs slower than planned, and never reads 0:00 while
work remains (how it is estimated: docs/internals.md).
"""

from __future__ import annotations

import dataclasses
import shutil
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from typing import IO, Any

Say = Callable[[str], None]
Clock = Callable[[], float]

#: Seconds between redraws of the bar by the ticker thread.
TICK_S = 1.0
#: Characters of the bar itself.
BAR_WIDTH = 20
#: The widest a line kept (not the bar) may be: longer ones are wrapped,
#: their continuation indented.
LINE_WIDTH = 100
#: The prior (seconds per unit, when the command gives one) weighs as much
#: as this share of the planned work done: a first step far faster or
#: slower than planned moves the ETA, without deciding it alone.
PRIOR_SHARE = 0.1
#: A step that has overrun its estimate is given this share of the time it
#: has taken so far as its remainder, and never less than MIN_LEFT_S: the
#: ETA does not read 0:00 while work remains.
OVERRUN_SHARE = 0.1
MIN_LEFT_S = 1.0


#: When the command began, on time.monotonic's clock (None: not said):
#: "elapsed" then counts the start-up and the checks before the work too.
_command_started: float | None = None


def command_started(at: float | None = None) -> None:
    """The command began at *at* (time.monotonic; default now)."""
    global _command_started
    _command_started = time.monotonic() if at is None else at


def process_age() -> float:
    """Seconds since this process started (the interpreter's start-up and
    imports included; 0 where /proc does not say)."""
    import os

    try:
        with open("/proc/self/stat") as f:
            # Field 22, after the command name in parentheses: start time in
            # clock ticks after boot.
            ticks = int(f.read().rpartition(")")[2].split()[19])
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0.0
    return max(0.0, uptime - ticks / os.sysconf("SC_CLK_TCK"))


#: The speed probe (scenarios.results.environment.probe, best of five) on
#: the idle machine the commands' estimates were measured on: 0.49-0.55 ms
#: (2026-11-26, 2026-12-02; docs/internals.md).
REFERENCE_PROBE_S = 0.0005
#: The factor is bounded: one probe in a slow spell must not make an
#: estimate absurd; the ETA then follows the work.
FACTOR_BOUNDS = (0.5, 10.0)


@dataclasses.dataclass(frozen=True)
class Machine:
    """How much slower than the estimates' machine this one runs now: the
    speed probe against REFERENCE_PROBE_S, or the load beyond the CPUs,
    whichever says slower."""

    probe_s: float
    load: float | None
    cpus: int

    @property
    def factor(self) -> float:
        speed = self.probe_s / REFERENCE_PROBE_S
        share = (self.load or 0.0) / max(1, self.cpus)
        low, high = FACTOR_BOUNDS
        return min(high, max(low, speed, min(share, high)))

    def words(self) -> str:
        load = (
            "" if self.load is None else f", load {self.load:.1f} on {self.cpus} CPUs"
        )
        return (
            f"{self.factor:.1f}x the time they took on an idle machine (speed "
            f"probe {self.probe_s * 1e3:.2f} ms against "
            f"{REFERENCE_PROBE_S * 1e3:.2f} ms{load})"
        )


def machine_now() -> Machine:
    """This machine now: five speed probes (about 5 ms) and the load."""
    import os

    from scenarios.results.environment import probe

    try:
        load: float | None = os.getloadavg()[0]
    except OSError:
        load = None
    return Machine(min(probe() for _ in range(5)), load, os.cpu_count() or 1)


def duration(seconds: float | None) -> str:
    """0:42, 12:05, 1:02:03; "?" when not known yet."""
    if seconds is None:
        return "?"
    s = max(0, round(seconds))
    hours, rest = divmod(s, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02}:{secs:02}" if hours else f"{minutes}:{secs:02}"


class Progress:
    """Progress of one command: steps of a weight out of a total, the step
    in hand and its status, the ETA.

    *say* takes plain lines (None: silent: no lines, no bar).  *bar*: draw
    the live bar on *stream* (default: when *say* is given and stderr is a
    terminal).  *clock* is the time source (a test passes a fake one);
    *tick_s* the ticker's period (None: redraw only on events).
    Callable: progress(line) is progress.line(line), so it goes wherever a
    plain `say` function went.
    """

    def __init__(
        self,
        say: Say | None,
        bar: bool | None = None,
        *,
        what: str = "",
        unit: str = "",
        stream: IO[str] | None = None,
        clock: Clock = time.monotonic,
        tick_s: float | None = TICK_S,
    ) -> None:
        self.say = say
        self.what = what
        self.unit = unit
        self.stream = stream if stream is not None else sys.stderr
        if bar is None:
            bar = say is not None and _isatty(self.stream)
        self.bar = bool(bar) and say is not None
        self.clock = clock
        self.total = 0.0
        self.done = 0.0
        self.label = ""
        self.state = ""
        #: Seconds per unit before any step ended (None: no ETA until one has).
        self.unit_s: float | None = None
        #: The clock time the command will not end before (None: none known).
        self.floor_at: float | None = None
        #: Seconds known to follow the counted steps, not yet anchored.
        self.extra_s = 0.0
        #: The units the work needs (the ETA's), when fewer than *total*,
        #: the most it may take (run's budget: top-up trials up to a cap).
        self.required: float | None = None
        self._weight = 0.0
        self._step_at: float | None = None
        self._first_at: float | None = None
        self._last_end: float | None = None
        self._started = clock()
        if clock is time.monotonic and _command_started is not None:
            self._started = min(self._started, _command_started)
        #: Each step ended: (label, weight, seconds it took), for a command
        #: that reports its plan against what it took.
        self.steps: list[tuple[str, float, float]] = []
        self._share = 0.0
        self._lock = threading.RLock()
        self._drawn = False
        self._tick_s = tick_s
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    # -- what the command tells it --------------------------------------------

    def plan(
        self,
        total: float,
        unit_s: float | None = None,
        extra_s: float | None = None,
        required: float | None = None,
        idle_s: bool = False,
    ) -> None:
        """The work in all, in units (never lowered: a smaller *total* than
        the one planned is ignored); *unit_s*: seconds per unit to assume
        before a step has ended; *extra_s*: seconds known to follow;
        *required*: the units the work surely takes when *total* is only
        the most it may take (the count then reads "of at most").
        *idle_s*: *unit_s* is what a unit took on an idle machine, and
        scales with this one's speed and load now (machine_now()), said in
        a line; a time the work spends in full (a load window) does not."""
        if idle_s and unit_s is not None and self.clock is time.monotonic:
            machine = machine_now()
            unit_s *= machine.factor
            if self.say is not None and abs(machine.factor - 1.0) > 0.2:
                self.line(f"{self.what or 'estimates'}: estimates at {machine.words()}")
        with self._lock:
            self.total = max(self.total, float(total), self.done)
            if required is not None:
                self.required = min(float(required), self.total)
            if unit_s is not None:
                self.unit_s = unit_s
            if extra_s is not None:
                self.extra_s = extra_s
            self._draw()

    def not_before(self, seconds: float) -> None:
        """The command will not end within *seconds* from now (a budget it
        spends in full, unless it settles early); replaces extra_s."""
        with self._lock:
            self.floor_at = self.clock() + seconds
            self.extra_s = 0.0
            self._draw()

    def step(self, label: str, weight: float = 1.0) -> None:
        """A step starts (the one before, if not advanced, is done)."""
        with self._lock:
            if self._step_at is not None:
                self._end_step()
            now = self.clock()
            self.label, self.state = label, ""
            self._weight = weight
            self._step_at = now
            if self._first_at is None:
                self._first_at = now
            self.total = max(self.total, self.done + weight)
            self._draw()
        if self.bar and self._tick_s and self._ticker is None:
            # Started with the first step, so a command that never takes
            # one never has a thread; close() stops it.
            self._stop = threading.Event()
            self._ticker = threading.Thread(
                target=self._tick,
                args=(self._tick_s, self._stop),
                name="progress",
                daemon=True,
            )
            self._ticker.start()

    def count(self, units: float) -> None:
        """*units* of the step in hand are done (a builder's objects)."""
        with self._lock:
            self.done += units
            self._weight = max(0.0, self._weight - units)
            self.total = max(self.total, self.done)
            self._last_end = self.clock()

    def status(self, text: str) -> None:
        """What the step is doing now (a phase): on the bar only."""
        with self._lock:
            self.state = text
            self._draw()

    def advance(self) -> None:
        """The step in hand is done."""
        with self._lock:
            if self._step_at is not None:
                self._end_step()
            self._draw()

    def line(self, text: str, counted: bool = False) -> None:
        """A line worth keeping (a point's result, a skipped storage); above
        the bar on a terminal.  *counted*: in plain lines, followed by
        where the command is (step k of N, ETA)."""
        if self.say is None:
            return
        with self._lock:
            if self.bar:
                self._clear()
                self.stream.write(_wrapped(text) + "\n")
                self.stream.flush()
                self._draw()
            else:
                self.say(_wrapped(f"{text} ({self.where()})" if counted else text))

    __call__ = line

    def close(self) -> None:
        """Stop the ticker and take the bar off the screen."""
        self._stop.set()
        ticker, self._ticker = self._ticker, None
        if ticker is not None and ticker is not threading.current_thread():
            ticker.join()
        with self._lock:
            self._clear()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- what it shows ----------------------------------------------------------

    def eta(self) -> float | None:
        """Seconds left, from the work left and the time per unit measured
        so far; None until something is known.  It may rise (a step slower
        than those before); it is 0 only when no work remains."""
        with self._lock:
            return self._raw_eta(self.clock())

    def elapsed(self) -> float:
        """Seconds since the progress began."""
        return self.clock() - self._started

    def fraction(self) -> float:
        """The share done, by time: elapsed / (elapsed + ETA); by steps while
        no ETA is known."""
        with self._lock:
            eta = self.eta()
            if eta is None:
                share = self.done / self.total if self.total else 0.0
            else:
                elapsed = self.clock() - self._started
                share = elapsed / (elapsed + eta) if elapsed + eta > 0 else 0.0
            self._share = max(self._share, min(1.0, share))
            return self._share

    def where(self) -> str:
        """ "3/10, ETA 0:42": the work done of the total, and the ETA."""
        with self._lock:
            count = ""
            if self.total and self.required is not None:
                count = f"{_number(self.done)} of at most {_number(self.total)}"
            elif self.total:
                count = f"{_number(self.done)}/{_number(self.total)}"
            if count and self.unit:
                count += f" {self.unit}"
            eta = f"ETA {duration(self.eta())}"
            return f"{count}, {eta}" if count else eta

    def text(self, width: int = 100) -> str:
        """The bar's one line, at most *width* characters."""
        with self._lock:
            share = self.fraction()
            filled = round(share * BAR_WIDTH)
            bar = "#" * filled + "-" * (BAR_WIDTH - filled)
            doing = self.label + (f": {self.state}" if self.state else "")
            head = f"{self.what} " if self.what else ""
            elapsed = duration(self.clock() - self._started)
            line = (
                f"{head}{share * 100:3.0f}% [{bar}] {self.where()} "
                f"({elapsed} elapsed) {doing}"
            )
            return line[: max(10, width - 1)]

    # -- inside ---------------------------------------------------------------

    def _end_step(self) -> None:
        if self._step_at is not None:
            took = self.clock() - self._step_at
            self.steps.append((self.label, self._weight, took))
        self.done += self._weight
        self.total = max(self.total, self.done)
        self._last_end = self.clock()
        self._step_at = None
        self._weight = 0.0

    def _needed(self) -> float:
        return self.total if self.required is None else self.required

    def _rate(self) -> float | None:
        """Seconds per unit: from the steps done, blended with the prior
        (weighing PRIOR_SHARE of the total) when there is one."""
        measured = 0.0
        if self.done > 0 and self._first_at is not None and self._last_end is not None:
            measured = self._last_end - self._first_at
        if self.unit_s is None:
            return measured / self.done if self.done > 0 else None
        prior = PRIOR_SHARE * self._needed()
        if self.done + prior <= 0:
            return self.unit_s
        return (measured + prior * self.unit_s) / (self.done + prior)

    def _raw_eta(self, now: float) -> float | None:
        rate = self._rate()
        left: float | None = None
        if rate is not None:
            ahead = self._needed() - self.done
            current = 0.0
            if self._step_at is not None:
                # the step in hand: its expected time less what it has taken
                # since it began or last counted units; one that overran is
                # not done either (a share of its time so far)
                since = max(self._step_at, self._last_end or self._step_at)
                spent = now - since
                expected = self._weight * rate
                current = expected - spent
                if current < MIN_LEFT_S:
                    current = max(MIN_LEFT_S, OVERRUN_SHARE * spent)
                ahead -= self._weight
            left = current + max(0.0, ahead) * rate + self.extra_s
            if left < MIN_LEFT_S and (
                self._step_at is not None or self._needed() > self.done
            ):
                left = MIN_LEFT_S
        if self.floor_at is not None:
            floor = max(0.0, self.floor_at - now)
            left = floor if left is None else max(left, floor)
        return left

    def _draw(self) -> None:
        if not self.bar or self._first_at is None:
            return
        width = shutil.get_terminal_size((100, 24)).columns
        self.stream.write("\r" + self.text(width) + "\x1b[K")
        self.stream.flush()
        self._drawn = True

    def _clear(self) -> None:
        if self._drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._drawn = False

    def _tick(self, period: float, stop: threading.Event) -> None:
        while not stop.wait(period):
            with self._lock:
                self._draw()


def _wrapped(text: str) -> str:
    """*text* with each line longer than LINE_WIDTH wrapped at spaces, its
    continuation indented two more than the line."""
    out = []
    for line in text.split("\n"):
        if len(line) <= LINE_WIDTH:
            out.append(line)
            continue
        indent = " " * (len(line) - len(line.lstrip(" ")) + 2)
        out += textwrap.wrap(
            line,
            LINE_WIDTH,
            subsequent_indent=indent,
            break_on_hyphens=False,
            break_long_words=False,
        )
    return "\n".join(out)


def _number(x: float) -> str:
    return f"{x:,.0f}" if x == int(x) else f"{x:,.1f}"


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def progress_of(
    progress: Progress | Say | None, what: str = "", unit: str = ""
) -> Progress:
    """A Progress for a runner's *progress* argument: the one given (named
    *what*, counting *unit*, unless it says otherwise), plain lines to a
    `say` function, or silence for None."""
    if isinstance(progress, Progress):
        progress.what = progress.what or what
        progress.unit = progress.unit or unit
        return progress
    return Progress(progress, bar=False, what=what, unit=unit)
