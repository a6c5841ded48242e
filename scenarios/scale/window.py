"""A scale point's window: its clients started, the warmup, the window
measured with the fault applied in it, the clients' results taken; a lost
worker or Ctrl-C stops them (scenarios.scale.runner.run_point around it:
the plan before, the figures and the check after)."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from scenarios.clients.cpu import CPUMeter
from scenarios.clients.fleet import Fleet, WorkerLost
from scenarios.progress import Progress
from scenarios.results.formatter import plural
from scenarios.scale.config import Fault, ScaleConfig
from storages import Shared, StorageError


@dataclasses.dataclass
class Driven:
    """What driving a point's clients gave: each process's result, and how
    its window went (times on this process's clock, time.monotonic())."""

    results: list[Any]
    measure_at: float = float("inf")
    end_at: float = float("inf")
    applied_at: float | None = None
    restarted_at: float | None = None
    interrupted: bool = False
    incomplete: str | None = None


def drive(
    config: ScaleConfig,
    fleet: Fleet,
    clients: int,
    go_delay_s: float,
    shared: Shared,
    meter: CPUMeter,
    say: Progress,
    notes: list[str],
) -> Driven:
    """Start *fleet*'s clients, measure the window (the fault applied in
    it) and take their results; a lost worker or Ctrl-C stops them."""
    out = Driven([None] * len(fleet.plans))
    fault = config.fault
    try:
        say.status("starting the clients")
        fleet.start()
        processes = len(fleet.plans)
        ready = fleet.wait_ready(timeout=30 + 3 * clients)
        if ready < processes:
            notes.append(
                f"only {ready} of "
                f"{plural(processes, 'client process', 'client processes')} "
                "started"
            )
        start_at = fleet.go(go_delay_s)
        out.measure_at = start_at + config.warmup_s
        out.end_at = out.measure_at + config.duration_s
        say.status("warmup")
        sleep_until(out.measure_at, fleet)
        say.status("measuring")
        meter.start()
        if fault is not None:
            out.applied_at, out.restarted_at = apply_fault(
                fault, fleet, shared, meter, out.measure_at, say, notes
            )
        sleep_until(out.end_at, fleet)
        meter.sample()
        out.results = fleet.results(timeout=config.wait_timeout_s + 15)
    except WorkerLost as e:
        at = time.monotonic() - out.measure_at
        when = f"{at:.1f} s into the window" if at >= 0 else "before the window"
        out.incomplete = f"{e} {when}"
        say(f"  {out.incomplete}: stopping the other clients")
        fleet.stop()
        out.results = fleet.results(timeout=config.wait_timeout_s + 10)
    except KeyboardInterrupt:
        out.interrupted = True
        out.end_at = min(out.end_at, time.monotonic())
        say("  interrupted: stopping the clients")
        meter.sample()
        fleet.stop()
        try:
            out.results = fleet.results(timeout=config.wait_timeout_s + 10)
        except KeyboardInterrupt:  # again: stop waiting for them
            fleet.close(grace=0)
            notes.append("Ctrl-C twice: the clients' results are lost")
    return out


def apply_fault(
    fault: Fault,
    fleet: Fleet,
    shared: Shared,
    meter: CPUMeter,
    measure_at: float,
    say: Progress,
    notes: list[str],
) -> tuple[float, float | None]:
    """Apply *fault* when it is due: kill the server (and restart it after
    its delay) or a client process.  When it came and when the server came
    back, in seconds into the window."""
    sleep_until(measure_at + fault.at_s, fleet)
    applied_at = time.monotonic() - measure_at
    restarted_at = None
    if fault.kind != "kill-server":
        fleet.kill(0)
        say(f"  killed client process 0 at {applied_at:.1f} s")
        return applied_at, None
    meter.sample()
    shared.kill_server()
    say(f"  killed the server at {applied_at:.1f} s")
    if fault.restart_s is not None:
        sleep_until(measure_at + fault.at_s + fault.restart_s, fleet)
        try:
            shared.restart_server()
        except StorageError as e:
            notes.append(f"the restart failed: {e}")
        else:
            restarted_at = time.monotonic() - measure_at
            say(f"  restarted it at {restarted_at:.1f} s")
    return applied_at, restarted_at


def sleep_until(at: float, fleet: Fleet | None = None) -> None:
    """Sleep until *at* (time.monotonic()), asking *fleet* every 0.1 s
    whether a host was lost (WorkerLost)."""
    while True:
        if fleet is not None:
            fleet.poll()
        left = at - time.monotonic()
        if left <= 0:
            return
        time.sleep(min(left, 0.1))
