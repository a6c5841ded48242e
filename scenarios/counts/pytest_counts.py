"""pytest-benchmark under counts: `run` runs pytest under callgrind (each
benchmark's instructions in its extra_info), `compare` compares two saved
files by instructions (usage: docs/counts.md; docs/internals.md).
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from scenarios import argtypes
from scenarios.counts import fixed
from scenarios.counts.compare import EXACT_THRESHOLD
from scenarios.counts.pytest_plugin import DUMPS_VARIABLE
from scenarios.counts.runner import check_tools, counted_bound, reap, stop
from scenarios.results.formatter import plural
from storages.process import die_with_parent

#: What benchmarks need under counts: measured (the suite's addopts
#: disable them), one round where the test does not choose, no warmup.
BENCHMARK_OPTIONS = (
    "--benchmark-enable",
    "--benchmark-min-rounds=1",
    "--benchmark-max-time=0",
    "--benchmark-warmup=off",
    # The fixed clock replaces time.perf_counter, pytest-benchmark's timer.
    "--benchmark-timer=time.process_time",
)


def _run(command: list[str], env: dict[str, str], bound: float | None = None) -> int:
    """Run *command* to its end, at most *bound* seconds (then it is stopped
    and this exits 2 saying so); its exit status.  Whatever it started
    (every process carrying the run's mark) is stopped after it."""
    process = subprocess.Popen(
        command,
        env=env,
        start_new_session=True,
        preexec_fn=die_with_parent(signal.SIGKILL),
    )
    try:
        return process.wait(bound)
    except subprocess.TimeoutExpired:
        raise SystemExit(
            f"pytest_counts: {command[0]} did not end within {bound:.0f} s; "
            "it was stopped"
        ) from None
    finally:
        try:
            stop(process)
        finally:
            reap(env[fixed.RUN_VAR])


def run(pytest_args: list[str]) -> int:
    check_tools()
    mark = fixed.new_run_mark()
    with fixed.private_directory() as private:
        (private / "pycache").mkdir()
        dumps = private / "callgrind"
        dumps.mkdir()
        native = [sys.executable, "-P", "-m", "pytest", "-q", "--benchmark-disable"]
        env = fixed.child_environment(private, write_bytecode=True, run=mark)
        started = time.monotonic()
        code = _run([*native, *(a for a in pytest_args if "json" not in a)], env)
        if code != 0:
            return code
        bound = counted_bound(time.monotonic() - started)
        env = fixed.child_environment(private, run=mark)
        env[DUMPS_VARIABLE] = str(dumps)
        command = [
            "valgrind",
            "--tool=callgrind",
            "--instr-atstart=no",
            f"--callgrind-out-file={dumps}/callgrind.out.%p",
            f"--log-file={private}/valgrind.%p.log",
            sys.executable,
            "-P",
            "-m",
            "pytest",
            "-p",
            "scenarios.counts.pytest_plugin",
            *BENCHMARK_OPTIONS,
            *pytest_args,
        ]
        return _run(command, env, bound)


def instructions(path: Path) -> dict[str, int]:
    try:
        data = json.loads(path.read_text())
        return {
            b["fullname"]: b["extra_info"]["instructions"]
            for b in data["benchmarks"]
            if "instructions" in b.get("extra_info", {})
        }
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise SystemExit(
            f"pytest_counts: cannot read counts from {path}: {e}"
        ) from None


def compare(old: Path, new: Path, fail_above: float | None) -> int:
    a, b = instructions(old), instructions(new)
    if not a or not b:
        empty = old if not a else new
        print(
            f"pytest_counts: {empty} holds no instructions (run it with "
            "`python -m scenarios.counts.pytest_counts run`)",
            file=sys.stderr,
        )
        return 2
    grew: list[str] = []
    for name in a:
        if name not in b:
            continue
        change = b[name] / a[name] - 1 if a[name] else 0.0
        differs = abs(change) > EXACT_THRESHOLD
        verdict = (
            f"{change * 100:+.1f}%"
            if differs
            else "same"
            if change == 0
            else f"{change * 100:+.2f}%, within 2%"
        )
        print(f"{name}: {a[name]:,} -> {b[name]:,}: {verdict}")
        if fail_above is not None and differs and change > fail_above:
            grew.append(f"{name} ({change * 100:+.1f}%)")
    if grew:
        print(
            f"pytest_counts: {plural(len(grew), 'benchmark')} grew above "
            f"{fail_above:.0%}: {'; '.join(grew)}",
            file=sys.stderr,
        )
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["run"]:
        return run(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m scenarios.counts.pytest_counts")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("run", help="pytest ARGS... under callgrind")
    c = sub.add_parser("compare", help="two --benchmark-json files by instructions")
    c.add_argument("old", type=Path)
    c.add_argument("new", type=Path)
    c.add_argument("--fail-above", type=argtypes.percentage, metavar="PCT")
    args = parser.parse_args(argv)
    return compare(args.old, args.new, args.fail_above)


if __name__ == "__main__":
    from scenarios.errors import ConfigError

    try:
        sys.exit(main())
    except ConfigError as e:
        print(f"pytest_counts: {e}", file=sys.stderr)
        sys.exit(2)
