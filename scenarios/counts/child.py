"""The counted process (`python -P -m scenarios.counts.child JOB STORAGE MODE
OUT`, started by scenarios.counts.runner): one storage's warmups and
counted trials, natively, under callgrind or under strace, the phases'
labels and the trials' summaries written to OUT (docs/internals.md).
Should its parent (the launcher, or strace) die without stopping it, Linux
sends it SIGTERM, which it turns into the cleanup of Ctrl-C.
"""

from __future__ import annotations

import sys

from scenarios.counts import fixed

# Before anything imports the storages (RelStorage binds perf_counter).
if __name__ == "__main__":
    import os as _os

    fixed.shift_layout(int(_os.environ.get(fixed.LAYOUT_VAR, "0")))
    fixed.fix_process()

import gc  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import os  # noqa: E402
import pickle  # noqa: E402
import signal  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import TYPE_CHECKING, Any  # noqa: E402

if TYPE_CHECKING:
    from scenarios.bench.config import RunConfig

MODES = ("native", "callgrind", "strace")


def read_job(path: Path) -> tuple[RunConfig, bool]:
    """The RunConfig scenarios.counts.runner.write_job wrote, and whether to
    tell which trial is counted."""
    from scenarios.bench import config

    job = pickle.loads(path.read_bytes())
    assert isinstance(job["config"], config.RunConfig), type(job["config"])
    return job["config"], bool(job["progress"])


def run(job: Path, storage: str, mode: str, out: Path) -> None:
    import storages
    from scenarios.bench.phases import Phase, TrialState
    from scenarios.bench.runner import _json_safe, run_trial

    fixed.fix_trial_keys(Path(os.environ["TMPDIR"]).parent)
    from scenarios.counts import typecache
    from scenarios.counts.meters import CallgrindMeter, Meter, StraceMeter
    from scenarios.results.metadata import implementations

    config, progress = read_job(job)
    factory = storages.get(storage, config.storage_options)
    meter: Meter
    if mode == "callgrind":
        from scenarios.counts import build

        meter = CallgrindMeter(build.load(), servers=factory.starts_server)
    else:  # strace; natively, the markers are two failed access() calls
        meter = StraceMeter(servers=factory.starts_server)
    phases = config.phases
    settle = factory.starts_server
    plan: list[dict[str, Any]] = []
    summaries: list[dict[str, Any]] = []
    trial_no = 0

    def measure(phase: Phase, state: TrialState, store: storages.Store) -> str:
        gc.collect()
        if phase.prepare is not None:
            phase.prepare(state)
        label = f"t{trial_no}p{len(plan)}"
        # What a server does for the client lands in the window of the
        # phase that asked it, however late the server gets to it: a round
        # trip before each mark (ZEO's server closed a commit's log after
        # answering it, its last lseek inside the next phase's window in
        # 2 runs of 9).  Only where a server is talked to: the others'
        # counts stay as they were.
        if settle:
            store.server_round_trip()
        gc.collect()
        typecache.settle()
        # The collector's own schedule moves with the layout (its young
        # generation's count at the phase's start, the old generations'
        # thresholds against what lives): a phase of 0.2 M instructions
        # counted 12% more under one start-up layout in six.  Off during
        # the phase; the garbage it made is collected once, at its end,
        # inside the count (docs/counts.md).
        gc.disable()
        try:
            meter.begin(label)
            phase.run(state)
            gc.collect(0)
            if settle:
                store.server_round_trip()
            meter.end(label)
        finally:
            gc.enable()
        plan.append({"trial": trial_no, "phase": phase.name, "label": label})
        return label

    def say(text: str) -> None:
        if mode != "native" and progress:
            print(f"{storage} ({mode}): {text}", file=sys.stderr, flush=True)

    with factory.running():
        for w in range(config.warmups):
            say(f"warmup {w + 1}")
            run_trial(factory, config, phases)
        gc.collect()
        gc.freeze()
        meter.start()
        for t in range(config.repeat):
            trial_no = t + 1
            say(f"counted trial {trial_no}")
            trial = run_trial(factory, config, phases, measure=measure)
            summaries.append(_json_safe(trial.summary.to_json()))
    result = {
        "storage": storage,
        "mode": mode,
        # The client's pid: its dumps are told from a server's by it (both
        # dump every label; pids wrap, so their order says nothing).
        "pid": os.getpid(),
        "phases": plan,
        "client_tids": sorted(meter.client_tids),
        "server_pids": sorted(meter.server_pids),
        "trials": summaries,
        # Whether every phase started from the same type cache (False on an
        # interpreter whose type tags cannot be read: scenarios.counts.typecache).
        "settled": typecache.works(),
        # Which implementation of each accelerated package was counted.
        "implementations": implementations(),
    }
    out.write_text(json.dumps(result, indent=1) + "\n")


def die_with_parent(signum: int) -> None:
    """Ask Linux for *signum* when the parent dies (strace, whose own death
    leaves its tracee running); at once if it already has."""
    from storages.process import die_with_parent as death_signal

    parent = os.getppid()
    preexec = death_signal(signum)
    if preexec is not None:
        preexec()
        if os.getppid() != parent:
            os.kill(os.getpid(), signum)


def main(argv: list[str]) -> int:
    from scenarios.errors import one_line
    from scenarios.interrupts import defer_interrupts

    if len(argv) != 4 or argv[2] not in MODES:
        print(
            "usage: python -m scenarios.counts.child JOB STORAGE MODE OUT",
            file=sys.stderr,
        )
        return 2
    # SIGTERM from the launcher cleans up as Ctrl-C does (servers stopped).
    defer_interrupts()
    die_with_parent(signal.SIGTERM)
    # The fixed clock starts at the same instant in every process: a
    # database an earlier process wrote (the callgrind child's, for the
    # strace child; a --storage-config one) holds "future" transactions.
    logging.getLogger("ZODB.FileStorage").addFilter(
        lambda record: "in the future" not in record.getMessage()
    )
    try:
        run(Path(argv[0]), argv[1], argv[2], Path(argv[3]))
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # noqa: BLE001 - one line for the launcher
        print(f"{argv[1]}: {one_line(e)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
