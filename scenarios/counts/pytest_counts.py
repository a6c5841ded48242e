"""pytest-benchmark under counts: `run` runs pytest under callgrind (each
benchmark's instructions in its extra_info), `compare` compares two saved
files by instructions (usage: docs/counts.md; docs/internals.md).
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import time
from pathlib import Path

from scenarios import argtypes
from scenarios.counts import fixed
from scenarios.counts.compare import benchmark_cells, compare_benchmarks
from scenarios.counts.pytest_plugin import DUMPS_VARIABLE
from scenarios.counts.runner import check_tools, counted_bound, reap, stop
from scenarios.results.compare import EXIT_NOT_FULLY_CHECKED, listed
from scenarios.results.files import ResultsError, read_json
from scenarios.results.formatter import plural
from scenarios.results.table import WIDTH
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


def compare(old: Path, new: Path, fail_above: float | None) -> int:
    """The two files' benchmarks by instructions, as `vfab-bench compare`
    and the release compare them (scenarios.counts.compare); with
    *fail_above*, 1 when one grew by more than it and its tolerance."""
    try:
        comparison = compare_benchmarks(
            benchmark_cells(read_json(old), str(old)),
            benchmark_cells(read_json(new), str(new)),
            str(old),
            str(new),
        )
    except ResultsError as e:
        print(f"pytest_counts: {e}", file=sys.stderr)
        return 2
    print(comparison.text(), end="", flush=True)
    grew = [] if fail_above is None else comparison.above(fail_above)
    if grew:
        what = plural(len(grew), "benchmark")
        head = f"pytest_counts: {what} grew above {fail_above:.0%}: "
        cells = [c.gate_name for c in comparison.biggest(grew)]
        print(head + listed(cells, 8, WIDTH - len(head)), file=sys.stderr)
        return 1
    if comparison.unchecked:
        head = "pytest_counts: NOT FULLY CHECKED: compared less than both files hold: "
        print(
            head + listed(comparison.unchecked, 8, WIDTH - len(head)), file=sys.stderr
        )
        return EXIT_NOT_FULLY_CHECKED
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
