"""Running the release's parts, each into files of the output directory: a
part failing is recorded with its one line and the next part runs; Ctrl-C,
SIGTERM, SIGHUP and an --out file that cannot be written (a full disk)
stop the release, its pytest children stopped as Ctrl-C stops them
(docs/internals.md).
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from scenarios.bench.config import RunConfig
from scenarios.errors import one_line
from scenarios.interrupts import interrupt_again
from scenarios.micro import MicroPlan
from scenarios.outputs import OutputError, write_json, write_text
from scenarios.progress import Progress, duration
from scenarios.release.measures import KNOWN_WRONG, states
from scenarios.release.microbench import micro_text
from scenarios.release.plan import CountsPlan
from scenarios.results.formatter import plural
from scenarios.scale.config import ScaleConfig
from storages import StorageOptions
from vfab.codec import Derived

#: Where the micro suite lives in a source checkout.
PROJECT = Path(__file__).resolve().parent.parent.parent
MICRO_SUITE = PROJECT / "tests" / "benchmarks" / "test_micro.py"
#: The longest the micro suite may take before it is stopped (seconds).
MICRO_TIMEOUT_S = 900.0
#: Seconds a pytest child has to clean up after Ctrl-C before SIGKILL.
STOP_GRACE_S = 30.0
#: Seconds between the lines that say a child pytest is still at work.
STILL_S = 30.0
#: Seconds the micro suite is assumed to take per storage (the progress's
#: ETA before it ends; measured here: 10-20 s per storage, loaded).
MICRO_S_PER_STORAGE = 15.0
#: Seconds the 2000 rows' counts take per storage (natively, under
#: callgrind, under strace; measured idle: 129 s for the six default ones).
COUNTS_S_PER_STORAGE = 22.0


@dataclasses.dataclass
class PartResult(Derived):
    """What one part gave: *status* "ok", "failed", "violations", "not
    checked" or "not run"; *text* its report; *files* written (names in the
    output directory); *detail* the reason for a status other than ok."""

    name: str
    title: str
    status: str = "ok"
    detail: str = ""
    files: list[str] = dataclasses.field(default_factory=list)
    text: str = ""
    data: Any = None

    #: Its JSON in release.json (codec.derived): not its report or data.
    JSON_SKIP: ClassVar[tuple[str, ...]] = ("text", "data")


def guarded(part: PartResult, body: Callable[[], None]) -> PartResult:
    """Run *body*; an error (not Ctrl-C, not an output that cannot be
    written) makes the part failed, in one line."""
    try:
        body()
    except OutputError:
        raise
    except Exception as e:  # noqa: BLE001 - one part's failure is reported, not raised
        part.status, part.detail = "failed", one_line(e)
    return part


def run_table(
    name: str,
    title: str,
    config: RunConfig,
    out: Path,
    force: bool,
    progress: Progress,
) -> PartResult:
    """A bench run (the 2000 table, the million run) into NAME.json,
    NAME.html and NAME.txt."""
    from scenarios.bench import page as html
    from scenarios.bench import report, runner

    part = PartResult(name, title)

    def body() -> None:
        result = runner.run(config, progress)
        part.data = result
        part.text = report.text(result)
        write_json(out / f"{name}.json", result.to_json(), force)
        write_text(out / f"{name}.html", html.page(result), force)
        write_text(out / f"{name}.txt", part.text, force)
        part.files += [f"{name}.json", f"{name}.html", f"{name}.txt"]

    return guarded(part, body)


def run_micro(
    plan: MicroPlan, out: Path, force: bool, progress: Progress
) -> PartResult:
    """The pytest-benchmark micro suite in a child pytest, its JSON into
    micro.json and its output into micro.txt."""
    part = PartResult("micro", "Micro-benchmarks (pytest-benchmark)")
    if not plan.storages:
        part.status = "not run"
        part.detail = "none of the storages named is one the micro suite knows"
        return part
    if not MICRO_SUITE.is_file():
        part.status = "not run"
        part.detail = f"{MICRO_SUITE} not found: the suite ships in a source checkout"
        return part

    def body() -> None:
        json_path = out / "micro.json"
        if json_path.exists() and not force:
            raise FileExistsError(f"{json_path} exists; use --force to replace it")
        argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q"]
        argv += [str(MICRO_SUITE), *plan.pytest_args(json_path)]
        progress.plan(1, unit_s=MICRO_S_PER_STORAGE * len(plan.storages), idle_s=True)
        progress.step("pytest tests/benchmarks/test_micro.py --benchmark-only")
        done = PytestChild(argv).result(still_line(progress, "the micro-benchmarks"))
        progress.advance()
        write_text(out / "micro.txt", done.stdout + done.stderr, force)
        part.files.append("micro.txt")
        if json_path.exists():  # written by pytest-benchmark, under the umask
            part.files.insert(0, "micro.json")
            part.data = json.loads(json_path.read_text())
            part.text = micro_text(part.data)
        if done.returncode != 0:
            tail = (done.stdout + done.stderr).strip().splitlines()[-1:]
            part.status = "failed"
            part.detail = f"pytest exited {done.returncode}: {' '.join(tail)}"

    return guarded(part, body)


class PytestChild:
    """pytest (or pytest under callgrind) on the micro-benchmarks, started
    from the project's directory at once, its output into temporary files;
    result() waits for its end (at most MICRO_TIMEOUT_S from its start:
    subprocess.TimeoutExpired).  Should the wait stop (Ctrl-C, SIGTERM,
    SIGHUP, the timeout), or this process die, the child gets SIGINT:
    pytest's Ctrl-C, which runs its fixtures' cleanup (the temporary
    directories and servers it made); SIGKILL to its session after
    STOP_GRACE_S."""

    def __init__(self, argv: list[str]) -> None:
        from storages.process import die_with_parent

        self.argv = argv
        # The user's options are not the suite's, and a release run from a
        # pytest-xdist worker (pytest -n) starts a pytest of its own, not a
        # worker: pytest-benchmark reads PYTEST_XDIST_WORKER as xdist on and
        # refuses --benchmark-only.
        env = {
            k: v
            for k, v in os.environ.items()
            if k != "PYTEST_ADDOPTS" and not k.startswith("PYTEST_XDIST_")
        }
        env["PYTHONPATH"] = str(PROJECT)
        # Files, not pipes: the child may run while this process does other
        # work (the counts), and never blocks on a full pipe.
        self._out = tempfile.TemporaryFile("w+")
        self._err = tempfile.TemporaryFile("w+")
        self.started = time.monotonic()
        self.process = subprocess.Popen(
            argv,
            cwd=PROJECT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self._out,
            stderr=self._err,
            text=True,
            start_new_session=True,
            preexec_fn=die_with_parent(signal.SIGINT),
        )

    def result(
        self, still: Callable[[float, str], None] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """The child's end; every STILL_S while it runs, *still*(seconds
        so far, its last line of output) says it is at work."""
        try:
            while True:
                left = self.started + MICRO_TIMEOUT_S - time.monotonic()
                try:
                    self.process.wait(max(0.0, min(left, STILL_S)))
                    break
                except subprocess.TimeoutExpired:
                    if left <= STILL_S:
                        raise
                if still is not None:
                    still(time.monotonic() - self.started, self.last_line())
        except BaseException:
            self.stop()
            raise
        texts = []
        for f in (self._out, self._err):
            f.seek(0)
            texts.append(f.read())
            f.close()
        return subprocess.CompletedProcess(self.argv, self.process.returncode, *texts)

    def last_line(self) -> str:
        """The last line the child wrote to stdout so far ("" if none)."""
        try:
            with open(self._out.fileno(), closefd=False) as f:
                f.seek(0)
                lines = f.read().strip().splitlines()
        except (OSError, ValueError):
            return ""
        return lines[-1][:80] if lines else ""

    def stop(self) -> None:
        """SIGINT, STOP_GRACE_S to clean up, then SIGKILL to its session."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(STOP_GRACE_S)
            except BaseException:  # its time is up, or a second Ctrl-C
                pass
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.process.wait()
        self._out.close()
        self._err.close()


def still_line(progress: Progress, what: str) -> Callable[[float, str], None]:
    """What PytestChild.result() calls every STILL_S: a line saying *what*
    is still at work, how long so far, and the child's last line."""

    def still(seconds: float, last: str) -> None:
        progress.line(
            f"release: {what}, {duration(seconds)} so far"
            + (f" (last: {last})" if last else "")
        )

    return still


def run_counts(
    plan: CountsPlan,
    out: Path,
    force: bool,
    progress: Progress,
) -> PartResult:
    """The 2000 rows counted (run --counts' launcher) into counts.json and
    counts.txt, then the micro-benchmarks counted under pytest into
    counts-micro.json and counts-micro.txt."""
    from scenarios.counts import report, runner

    part = PartResult("counts", "Counts: instructions and I/O calls (the gate)")

    def body() -> None:
        runner.check_tools()
        config = plan.table
        progress.plan(len(config.storages), unit_s=COUNTS_S_PER_STORAGE, idle_s=True)

        def say(line: str) -> None:
            if ": system calls counted" in line:
                progress.advance()
            progress.status(line)

        # Counts do not depend on the machine's load: the micro-benchmarks'
        # pytest under callgrind runs on the other core, beside the 2000
        # rows' children (one process each at a time).
        micro = _start_micro_counts(plan, out, force, progress, part)
        try:
            run = runner.count(config, say, child_progress=progress.say is not None)
        except BaseException:
            if micro is not None:
                micro.stop()
            raise
        part.data = run
        part.text = report.text(run)
        write_json(out / "counts.json", run.to_json(), force)
        write_text(out / "counts.txt", part.text, force)
        part.files += ["counts.json", "counts.txt"]
        if micro is not None:
            progress.status("waiting for the micro-benchmarks under callgrind")
            _end_micro_counts(micro, out, force, progress, part)

    return guarded(part, body)


def _start_micro_counts(
    plan: CountsPlan, out: Path, force: bool, progress: Progress, part: PartResult
) -> PytestChild | None:
    """The micro-benchmarks under callgrind, started (None: none to count)."""
    if not plan.micro_storages:
        return None
    if not MICRO_SUITE.is_file():
        part.detail = f"no micro-benchmark counts: {MICRO_SUITE} not found"
        return None
    json_path = out / "counts-micro.json"
    if json_path.exists() and not force:
        raise FileExistsError(f"{json_path} exists; use --force to replace it")
    json_path.unlink(missing_ok=True)  # pytest-benchmark would not replace it
    argv = [sys.executable, "-m", "scenarios.counts.pytest_counts", "run"]
    argv += [*plan.pytest_args(json_path), str(MICRO_SUITE)]
    progress.line(
        f"release: counts: the micro-benchmarks on {', '.join(plan.micro_storages)} "
        "under callgrind, beside the 2000 rows"
    )
    return PytestChild(argv)


def _end_micro_counts(
    micro: PytestChild, out: Path, force: bool, progress: Progress, part: PartResult
) -> None:
    done = micro.result(
        still_line(progress, "counts: the micro-benchmarks under callgrind")
    )
    took = time.monotonic() - micro.started
    json_path = out / "counts-micro.json"
    write_text(out / "counts-micro.txt", done.stdout + done.stderr, force)
    part.files.append("counts-micro.txt")
    if json_path.exists():
        part.files.insert(2, "counts-micro.json")
    if done.returncode != 0 or not json_path.exists():
        tail = (done.stdout + done.stderr).strip().splitlines()[-1:]
        part.status = "failed"
        part.detail = (
            f"the micro-benchmarks under counts exited {done.returncode}: "
            + " ".join(tail)
        )
    progress.line(
        f"release: counts: the micro-benchmarks counted in {took:.0f} s"
        + ("" if part.status == "ok" else f" ({part.status})")
    )


def run_scale(
    config: ScaleConfig,
    options: StorageOptions,
    out: Path,
    force: bool,
    progress: Progress,
) -> PartResult:
    """scale with the consistency check into scale.json, scale.txt and
    scale.svg (drawn as every chart of the pages); the status says what the
    check found."""
    import scenarios.results.metadata as metadata
    from scenarios.results import environment
    from scenarios.scale import report, runner
    from scenarios.scale.model import ScaleRun

    part = PartResult("scale", "Concurrency curve and consistency check (scale)")

    def body() -> None:
        meta = metadata.collect(config)
        start, probes = environment.snapshot(), environment.probes()
        try:
            points = runner.run(config, options, None, progress)
        except runner.ScaleInterrupted:
            raise interrupt_again() from None  # the release stops, by its signal
        meta["environment"] = environment.record(start, probes + environment.probes())
        run = ScaleRun(meta, tuple(points))
        part.data = run
        part.text = report.text(run)
        write_json(out / "scale.json", run.to_json(), force)
        write_text(out / "scale.txt", part.text, force)
        write_text(out / "scale.svg", report.svg_file(run), force)
        part.files += ["scale.json", "scale.txt", "scale.svg"]
        # One policy with verify and release --against (checker.known_bugs):
        # a storage WRONG by a known upstream bug is named, not a failure.
        found = states(run)
        wrong = [s for s, (state, _) in found.items() if state == "WRONG"]
        known = [s for s, (state, _) in found.items() if state == KNOWN_WRONG]
        if wrong:
            part.status = "violations"
            part.detail = f"the consistency check found violations ({', '.join(wrong)})"
        elif any(state == "not fully checked" for state, _ in found.values()):
            part.status = "not checked"
            part.detail = "the consistency check could not run on every point"
        if known:
            bugs = "; ".join(f"{s}: {found[s][1]}" for s in known)
            part.detail = "; ".join(
                x
                for x in (part.detail, f"{KNOWN_WRONG}, not this release's: {bugs}")
                if x
            )

    return guarded(part, body)


def verdicts(part: PartResult) -> list[str]:
    """The consistency verdict of each scale point, as scale prints it."""
    run = part.data
    if run is None:
        return []
    # "known upstream bug: RelStorage 4.3.0: ..." after KNOWN_WRONG's own
    # "a known upstream bug": the version and what, once.
    bugs = {
        s: why.rsplit("; ", 1)[-1].removeprefix("known upstream bug: ")
        for s, (state, why) in states(run).items()
        if state == KNOWN_WRONG
    }
    return [
        f"{p.storage}, {plural(p.clients, 'client')}: {p.check.summary}"
        + (
            f" ({KNOWN_WRONG}: {bugs[p.storage]})"
            if p.storage in bugs and p.check.ok is False
            else ""
        )
        for p in run.points
    ]
