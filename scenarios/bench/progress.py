"""What a run says while it runs: a live bar on a terminal, plain lines
elsewhere.

On a terminal (stderr is a TTY) a tqdm bar shows the round, the storage,
the trial's phase and an ETA; where stderr is a file or a pipe (CI, a log)
one line per round says what it did.  Both go to stderr, so stdout keeps
only the tables; -q silences both.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

Say = Callable[[str], None]


class RunProgress:
    """Progress of one run of rounds (one trial of every storage each).

    *say* takes plain lines (None: silent).  *bar* asks for the live bar
    when stderr is a terminal.
    """

    def __init__(self, say: Say | None, bar: bool | None = None) -> None:
        self.say = say or (lambda line: None)
        if bar is None:
            bar = say is not None and sys.stderr.isatty()
        self._bar: Any = None
        if bar:
            from tqdm import tqdm

            self._bar = tqdm(
                total=0, unit="trial", file=sys.stderr, leave=False, dynamic_ncols=True
            )
        self._round = ""
        self._started = time.perf_counter()

    def plan(self, trials: int) -> None:
        """The trials the run expects to take in all (warmups included)."""
        if self._bar is not None:
            self._bar.total = trials
            self._bar.refresh()

    def trial(self, storage: str, label: str) -> None:
        self._round = f"{label} {storage}"
        self._show("")

    def phase(self, name: str) -> None:
        self._show(name)

    def _show(self, phase: str) -> None:
        if self._bar is not None:
            text = f"{self._round}: {phase}" if phase else self._round
            self._bar.set_postfix_str(text, refresh=True)

    def trial_done(self) -> None:
        if self._bar is not None:
            self._bar.update(1)

    def line(self, text: str) -> None:
        """A line worth keeping (a round's summary, a skipped storage)."""
        if self._bar is not None:
            self._bar.write(text, file=sys.stderr)
        else:
            self.say(text)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
