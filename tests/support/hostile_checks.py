"""What tests/support/hostile.py's cases expect: judge() holds every case to the
common expectations (exit status within the bound, a refusal in one
expected line, no traceback, inputs unchanged, nothing left behind) and
its own checks, the rest of this module: each takes the Outcome and says
why it fails (None: met).  Paths are relative to the case's out/."""

from __future__ import annotations

import gzip
import json
import os
import re
import signal
import subprocess
from collections.abc import Callable

from tests.support.hostile_run import Outcome

Check = Callable[[Outcome], "str | None"]


def judge(
    o: Outcome, status: tuple[int, ...] | None, names: str, bound: float
) -> list[str]:
    """Each expectation of a case the command missed (empty: handled): the
    exit *status* allowed (None: any) within *bound* seconds; a refusal in
    one line naming *names*, not an error the edge did not expect; no
    traceback; inputs unchanged; nothing left in TMPDIR or running; the
    case's own checks."""
    out = list(o.during_missed)
    if o.status is None:
        out.append(f"hang: no exit within {bound:g} s")
    elif status is not None and o.status not in status:
        allowed = "/".join(map(str, status))
        out.append(f"exit {_status(o.status)}, not {allowed}")
    if "Traceback" in o.err_text or "Fatal Python error" in o.err_text:
        out.append("traceback")
    if o.status == 2:
        lines = o.err_text.strip().splitlines()
        if len(lines) != 1:
            out.append(f"{len(lines)} lines on stderr")
        if names and not re.search(names, o.err_text, re.I):
            out.append(f"the error does not name /{names}/")
        if "(--debug shows where)" in o.err_text:
            # the edge's mark of an error it did not expect: Python's words
            out.append("an unexpected error ('--debug shows where')")
    if o.changed:
        out.append("changed: " + ", ".join(o.changed[:5]))
    if o.tmp_left:
        out.append("left in TMPDIR: " + ", ".join(o.tmp_left[:5]))
    if o.left_running:
        out.append("left running: " + ", ".join(o.left_running[:3]))
    for check in o.invocation.checks:
        problem = check(o)
        if problem:
            out.append(problem)
    return out


def _status(status: int) -> str:
    if status < 0:
        return f"{status} (killed by {signal.Signals(-status).name})"
    return str(status)


def written(name: str, kind: str = "json", unless_refused: bool = False) -> Check:
    """out/NAME exists and reads as JSON (kind 'text': is not empty);
    *unless_refused*: only when the command did not refuse (exit 2)."""

    def check(o: Outcome) -> str | None:
        if unless_refused and o.status == 2:
            return None
        path = o.work.out / name
        try:
            data = path.read_bytes()
            if kind == "json":
                json.loads(data)
        except (OSError, ValueError) as e:
            return f"{name} not written ({type(e).__name__})"
        return None if data else f"{name} is empty"

    return check


def not_written(name: str) -> Check:
    return lambda o: f"{name} written" if (o.work.out / name).exists() else None


def made_nothing(o: Outcome) -> str | None:
    """Nothing made in out/ (where the refused output would have gone)."""
    made = os.listdir(o.work.out)
    return "made " + ", ".join(n[:40] for n in made) if made else None


def at_most_one_line(o: Outcome) -> str | None:
    lines = o.err_text.strip().splitlines()
    return f"{len(lines)} lines on stderr" if len(lines) > 1 else None


def quiet(o: Outcome) -> str | None:
    lines = o.err_text.strip().splitlines()
    return f"{len(lines)} lines on stderr under -q" if lines else None


def says(text: str) -> Check:
    return lambda o: None if text in o.out_text else f"stdout lacks {text!r}"


def errs(text: str) -> Check:
    return lambda o: None if text in o.err_text else f"stderr lacks {text!r}"


def says_why_unchecked(o: Outcome) -> str | None:
    """Exit 3 ("not fully checked") says so, and why, on stdout."""
    if o.status == 3 and not re.search(r"not (fully )?checked", o.out_text):
        return "exit 3 without saying what was not checked"
    return None


def never_says(text: str) -> Check:
    return lambda o: f"says {text!r}" if text in o.out_text + o.err_text else None


def no_escapes(o: Outcome) -> str | None:
    if b"\x1b" in o.out or b"\x1b" in o.err:
        return "printed a terminal escape sequence raw"
    return None


def gzip_or_refused(name: str) -> Check:
    """pyperf reads a .gz name as gzip: out/NAME gzipped, or refused (2)
    and not written."""

    def check(o: Outcome) -> str | None:
        path = o.work.out / name
        if o.status == 2:
            return f"{name} written although refused" if path.exists() else None
        try:
            with gzip.open(path) as f:
                json.load(f)
        except (OSError, ValueError) as e:
            return f"{name} is not gzipped JSON ({type(e).__name__})"
        return None

    return check


def suggestion_works(o: Outcome) -> str | None:
    """A command the error line suggests (`vfab-bench ...`) accepts what it
    is suggested for."""
    found = re.search(r"`vfab-bench ([^`]+)`", o.err_text)
    if not found:
        return None
    done = subprocess.run(
        o.work.cli(*found.group(1).split()),
        capture_output=True,
        cwd=o.work.out,
        timeout=60,
    )
    if done.returncode != 0:
        return f"suggests `vfab-bench {found.group(1)}`, which exits {done.returncode}"
    return None


def said_once(text: str) -> Check:
    """*text* on stderr exactly once (what is counted is said once)."""

    def check(o: Outcome) -> str | None:
        n = o.err_text.count(text)
        return None if n == 1 else f"{text!r} said {n} times on stderr"

    return check
