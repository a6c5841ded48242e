"""zodbshootout 0.8 beside `vfab-bench matrix`, on this machine, for the
cells both measure: add, update, write-then-read (zodbshootout's "warm"),
cold, warm (its "hot") and hot (its "steamin") reads, threads of one
process, on FileStorage, ZEO over FileStorage and RelStorage on SQLite.

    .venv/bin/python tools/shootout_side_by_side.py          # 1 thread, 10 objects
    .venv/bin/python tools/shootout_side_by_side.py --concurrency 5 --objects 100
    .venv/bin/python tools/shootout_side_by_side.py --small  # proves it works

zodbshootout 0.8.0 no longer starts from a fresh install (pyperf >= 2.4
clashes on --profile; it imports six without declaring it): it gets its
own virtual environment (--venv, default
~/.cache/vfab-loadtest/shootout-venv) with pyperf
2.3.1 and six, and the ZODB, ZEO, persistent and RelStorage versions of
this one, so that both measure the same stack.  The first run creates it
(pip, a minute or two); later runs reuse it.

A runzeo over a FileStorage is started here for zodbshootout's ZEO
column and stopped on every way out; every database lives in a
temporary directory, removed at the end.  The matrix is run for the same
cells with the same object size (zodbshootout's default "300 bytes" are
1.2 to 1.6 kB of its source text: the matrix writes 1,420 bytes).

Both report the slowest concurrent client's time; zodbshootout reports
it per transaction (pyperf's value for one inner loop), the matrix per
object: its values are divided by the objects per transaction here.

This machine's speed comes in spells: one side's own minimum moved
up to 2x between cycles twenty seconds apart, more than the 1.5x the two
are held to.  So the two run in turns (--cycles, each a matrix run then
a zodbshootout run), each cycle gives a ratio of the two minima taken in
it, and a cell is judged by the median of those paired ratios; its
range and each side's minimum over all cycles are printed beside it.
Timings taken on a busy machine are not a comparison: run it on an idle
one.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: zodbshootout's name -> the matrix's, for the benchmarks both have.
SHARED = {
    "add": "add",
    "update": "update",
    "warm": "write-read",
    "cold": "cold",
    "hot": "warm",
    "steamin": "hot",
}
STORAGES = ("file", "zeo", "relstorage-sqlite")
PINNED = ("ZODB", "ZEO", "persistent", "BTrees", "transaction", "RelStorage")
#: The matrix's rounds per cell in one cycle (each round a sample of its
#: minimum): about as many as zodbshootout's minimum is taken from in one
#: (2 pyperf processes of 3 values).
MATRIX_ROUNDS = 8
#: Seconds any one step may take before it is given up.
STEP_S = 3600
#: Where its virtual environment is kept between runs.
DEFAULT_VENV = Path.home() / ".cache" / "vfab-loadtest" / "shootout-venv"


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def make_venv(venv: Path) -> Path:
    """The virtual environment holding zodbshootout 0.8.0 (made if absent);
    its zodbshootout script."""
    script = venv / "bin" / "zodbshootout"
    if script.exists():
        return script
    _say(f"creating {venv} (zodbshootout 0.8.0, pyperf 2.3.1, six)")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    pins = [f"{name}=={metadata.version(name)}" for name in PINNED]
    subprocess.run(
        [str(venv / "bin" / "pip"), "install", "-q", "zodbshootout==0.8.0",
         "pyperf==2.3.1", "six", *pins],
        check=True, timeout=STEP_S,
    )  # fmt: skip
    return script


def shootout_config(work: Path, zeo_port: int) -> Path:
    """A ZConfig file naming the three databases as the matrix names them."""
    (work / "sqlite").mkdir()
    text = f"""%import relstorage

<zodb file>
  <filestorage>
    path {work / "file" / "Data.fs"}
  </filestorage>
</zodb>

<zodb zeo>
  <zeoclient>
    server 127.0.0.1:{zeo_port}
  </zeoclient>
</zodb>

<zodb relstorage-sqlite>
  <relstorage>
    keep-history false
    <sqlite3>
      data-dir {work / "sqlite"}
    </sqlite3>
  </relstorage>
</zodb>
"""
    (work / "file").mkdir()
    path = work / "shootout.conf"
    path.write_text(text)
    return path


def start_zeo(work: Path) -> tuple[subprocess.Popen[bytes], int]:
    """runzeo over a FileStorage on a free loopback port, ready."""
    sys.path.insert(0, str(ROOT))
    from storages.ports import free_port

    port = free_port()
    (work / "zeo").mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "ZEO.runzeo", "-a", f"127.0.0.1:{port}",
         "-f", str(work / "zeo" / "Data.fs")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    import socket

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, port
        except OSError:
            if proc.poll() is not None:
                break
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("tools/shootout_side_by_side.py: runzeo did not start")


def run_shootout(
    script: Path, config: Path, work: Path, args: argparse.Namespace
) -> dict[tuple[str, str], list[float]]:
    """zodbshootout's values (seconds per transaction), by (storage, its
    benchmark name)."""
    out = work / "shootout.json"
    pyperf = ["--quiet", *(["--fast"] if args.small else ["-p", str(args.processes)])]
    command = [
        str(script), *pyperf, "--threads", "shared", "-c", str(args.concurrency),
        "--object-counts", str(args.objects), "--include-mapping", "no",
        "-o", str(out), str(config), *SHARED,
    ]  # fmt: skip
    _say("$ " + " ".join(command))
    began = time.monotonic()
    subprocess.run(command, check=True, timeout=STEP_S, cwd=work)
    _say(f"zodbshootout took {time.monotonic() - began:.0f} s")
    values: dict[tuple[str, str], list[float]] = {}
    for storage in STORAGES:
        path = work / "shootout.d" / f"{storage}_{args.objects}.json"
        if not path.exists():
            continue
        suite = json.loads(path.read_text())
        for bench in suite.get("benchmarks", []):
            name = bench.get("metadata", {}).get("name")
            runs = [v for run in bench.get("runs", []) for v in run.get("values", [])]
            if name in SHARED and runs:
                values[(storage, SHARED[name])] = runs
    return values


def run_matrix(work: Path, args: argparse.Namespace) -> dict[tuple[str, str], float]:
    """The matrix's minimum per object, by (storage, its benchmark name)."""
    out = work / "matrix.json"
    command = [
        str(ROOT / ".venv" / "bin" / "vfab-bench"), "matrix",
        "--storage", ",".join(STORAGES), "--kind", "threads",
        "--concurrency", str(args.concurrency), "--objects", str(args.objects),
        "--benchmark", ",".join(SHARED.values()), "--json", str(out), "-q",
    ]  # fmt: skip
    if args.small:
        command += ["--rounds", "2", "--transactions", "1"]
    else:  # at the matrix's default 5, whole columns crossed 1.5x in one run
        command += ["--rounds", str(MATRIX_ROUNDS)]
    _say("$ " + " ".join(command[1:]))
    began = time.monotonic()
    subprocess.run(command, check=True, timeout=STEP_S, stdout=subprocess.DEVNULL)
    _say(f"vfab-bench matrix took {time.monotonic() - began:.0f} s")
    return {
        (cell["storage"], cell["benchmark"]): min(r["wall_s"] for r in cell["rounds"])
        / (args.objects * cell["transactions"])
        for cell in json.loads(out.read_text())["results"]
    }


@dataclasses.dataclass
class Cell:
    """One cell's minima per object, one of each side per cycle."""

    theirs: list[float] = dataclasses.field(default_factory=list)
    ours: list[float] = dataclasses.field(default_factory=list)

    def ratios(self) -> list[float]:
        """The matrix over zodbshootout, cycle by cycle (paired in time)."""
        return [o / t for o, t in zip(self.ours, self.theirs, strict=True)]


def run_cycle(
    script: Path, port: int, work: Path, args: argparse.Namespace,
    cells: dict[tuple[str, str], Cell],
) -> None:  # fmt: skip
    """The matrix, then zodbshootout, in *work*; each cell's two minima."""
    work.mkdir()
    ours = run_matrix(work, args)
    values = run_shootout(script, shootout_config(work, port), work, args)
    for key, seconds in ours.items():
        if values.get(key):
            cell = cells.setdefault(key, Cell())
            cell.ours.append(seconds)
            cell.theirs.append(min(values[key]) / args.objects)


def table(cells: dict[tuple[str, str], Cell]) -> list[str]:
    theirs = {v: k for k, v in SHARED.items()}
    lines = [
        f"{'storage':18} {'benchmark':24} {'zodbshootout':>14} {'matrix':>12} "
        f"{'ratio (range)':>20}  within 1.5x"
    ]
    for storage in STORAGES:
        for bench in SHARED.values():
            name = f"{theirs[bench]} / {bench}"
            cell = cells.get((storage, bench))
            if cell is None:
                lines.append(f"{storage:18} {name:24} {'(none)':>14}")
                continue
            ratios = cell.ratios()
            ratio = statistics.median(ratios)
            lines.append(
                f"{storage:18} {name:24} {min(cell.theirs) * 1e6:11.1f} µs "
                f"{min(cell.ours) * 1e6:9.1f} µs {ratio:6.2f}x "
                f"({min(ratios):.2f}-{max(ratios):.2f})  "
                f"{'yes' if 1 / 1.5 <= ratio <= 1.5 else 'NO'}"
            )
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--venv", type=Path, default=DEFAULT_VENV)
    p.add_argument("--concurrency", type=int, default=1)
    p.add_argument("--objects", type=int, default=10)
    p.add_argument("--processes", type=int, default=2, help="pyperf's worker processes")
    p.add_argument("--cycles", type=int, default=5, help="turns of each side")
    p.add_argument("--small", action="store_true", help="pyperf --fast, 2 rounds")
    args = p.parse_args(argv)
    if not (
        1 <= args.concurrency <= 100
        and 1 <= args.objects <= 100_000
        and 1 <= args.cycles <= 100
    ):
        print("shootout_side_by_side: --concurrency 1-100, --objects 1-100000, "
              "--cycles 1-100", file=sys.stderr)  # fmt: skip
        return 2
    script = make_venv(args.venv)
    work = Path(tempfile.mkdtemp(prefix="vfab-shootout-"))
    zeo = None
    try:
        zeo, port = start_zeo(work)
        cells: dict[tuple[str, str], Cell] = {}
        for cycle in range(1 if args.small else args.cycles):
            _say(f"cycle {cycle + 1}")
            run_cycle(script, port, work / f"cycle{cycle + 1}", args, cells)
    finally:
        if zeo is not None:
            zeo.terminate()
            try:
                zeo.wait(10)
            except subprocess.TimeoutExpired:
                zeo.kill()
                zeo.wait()
        shutil.rmtree(work, ignore_errors=True)
    host = os.uname()
    print(
        f"zodbshootout 0.8.0 vs vfab-bench matrix: {args.concurrency} thread(s) x "
        f"{args.objects} objects, time per object (each side's minimum over "
        f"{len(next(iter(cells.values())).ours) if cells else 0} cycles; the "
        "ratio: the median of the cycles' paired ratios, and their range), "
        f"{host.nodename} {host.machine}, {os.cpu_count()} CPUs, load "
        f"{os.getloadavg()[0]:.2f}"
    )
    print("\n".join(table(cells)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
