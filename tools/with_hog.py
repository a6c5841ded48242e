"""Run a command with a CPU hog beside it from the moment a line appears on
its stderr (say, `vfab-bench ab`'s "pair 6 of 10": the second half of its
pairs) until it ends:

    .venv/bin/python tools/with_hog.py --from "pair 6 of 10" -- \\
        vfab-bench ab .venv .venv --cells rows,micro,matrix --json aa-hog.json

The command's stdout and stderr pass through; the hog (a python process
spinning, one per --hogs) is stopped whenever the command ends, this
tool is interrupted (Ctrl-C, SIGTERM, SIGHUP) or fails.  Exit status: the
command's; 2 for bad input.  stderr says when the hog started and ended
(monotonic seconds since the command started).
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import time
from types import FrameType

SPIN = "while True: pass"
#: Bound on a stopped process's exit (seconds).
STOP_S = 10.0


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(STOP_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(STOP_S)


def raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def run(command: list[str], line: str, hogs: int) -> int:
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, raise_interrupt)
    began = time.monotonic()
    started: list[subprocess.Popen[bytes]] = []
    try:
        child = subprocess.Popen(command, stderr=subprocess.PIPE)
    except OSError as e:
        print(f"with_hog: cannot run {command[0]}: {e.strerror or e}", file=sys.stderr)
        return 2
    started.append(child)
    try:
        assert child.stderr is not None
        for raw in child.stderr:
            sys.stderr.buffer.write(raw)
            sys.stderr.flush()
            if len(started) == 1 and line.encode() in raw:
                for _ in range(hogs):
                    started.append(subprocess.Popen([sys.executable, "-c", SPIN]))
                print(
                    f"with_hog: {hogs} hog(s) from {time.monotonic() - began:.1f} s",
                    file=sys.stderr,
                )
        return child.wait()
    except KeyboardInterrupt:
        child.send_signal(signal.SIGINT)
        try:
            child.wait(STOP_S * 6)
        except subprocess.TimeoutExpired:
            pass
        return 130
    finally:
        for process in reversed(started):
            stop(process)
        if len(started) > 1:
            print(
                f"with_hog: hog(s) stopped at {time.monotonic() - began:.1f} s",
                file=sys.stderr,
            )


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--from", dest="line", required=True, metavar="TEXT",
                   help="start at the first stderr line holding TEXT")  # fmt: skip
    p.add_argument("--hogs", type=int, default=1, metavar="N",
                   help="CPU hogs (default: 1; 1 to 64)")  # fmt: skip
    p.add_argument("command", nargs=argparse.REMAINDER)
    args = p.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command or not args.line or not 1 <= args.hogs <= 64:
        print("with_hog: give --from TEXT [--hogs 1-64] -- COMMAND", file=sys.stderr)
        return 2
    return run(command, args.line, args.hogs)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
