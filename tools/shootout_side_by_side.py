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
object: its values are divided by the objects per transaction here.  The
matrix runs twice, before zodbshootout and after it, and its minimum is
taken over both: this machine's speed comes in spells of seconds, and one
slow spell during a single matrix run put a whole column past 1.5x.  Each
row prints both, the ratio and whether it lies within 1.5x.  Timings taken
on a busy machine are not a comparison: run it on an idle one.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import Any

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
#: The matrix's rounds per cell in each of its two runs (each round a
#: sample of its minimum): 16 in all, as many as zodbshootout's minimum is
#: taken from (5 pyperf processes of 3 values).
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
                values[(storage, name)] = runs
    return values


def run_matrix(work: Path, args: argparse.Namespace, name: str) -> Any:
    out = work / f"matrix-{name}.json"
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
    return json.loads(out.read_text())


def bracketed(before: Any, after: Any) -> Any:
    """The matrix run before zodbshootout with the rounds of the one run
    after it added to each cell: a minimum taken from both sides of
    zodbshootout's time, so that a slow spell of the machine during one
    matrix run (seconds long here) does not make a cell."""
    later = {(c["storage"], c["benchmark"]): c["rounds"] for c in after["results"]}
    for cell in before["results"]:
        cell["rounds"] = cell["rounds"] + later.get(
            (cell["storage"], cell["benchmark"]), []
        )
    return before


def table(
    shootout: dict[tuple[str, str], list[float]], matrix: Any, objects: int
) -> list[str]:
    lines = [
        f"{'storage':18} {'benchmark':24} {'zodbshootout':>14} {'matrix':>12} "
        f"{'ratio':>7}  within 1.5x"
    ]
    for cell in matrix["results"]:
        theirs = {v: k for k, v in SHARED.items()}[cell["benchmark"]]
        values = shootout.get((cell["storage"], theirs))
        per = objects * cell["transactions"]
        ours = min(r["wall_s"] for r in cell["rounds"]) / per
        if not values:
            lines.append(f"{cell['storage']:18} {theirs:24} {'(none)':>14}")
            continue
        their = min(values) / objects
        ratio = ours / their
        lines.append(
            f"{cell['storage']:18} {theirs + ' / ' + cell['benchmark']:24} "
            f"{their * 1e6:11.1f} µs {ours * 1e6:9.1f} µs {ratio:6.2f}x  "
            f"{'yes' if 1 / 1.5 <= ratio <= 1.5 else 'NO'}"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--venv", type=Path, default=DEFAULT_VENV)
    p.add_argument("--concurrency", type=int, default=1)
    p.add_argument("--objects", type=int, default=10)
    p.add_argument("--processes", type=int, default=5, help="pyperf's worker processes")
    p.add_argument("--small", action="store_true", help="pyperf --fast, 2 rounds")
    args = p.parse_args(argv)
    if not (1 <= args.concurrency <= 100 and 1 <= args.objects <= 100_000):
        print("shootout_side_by_side: --concurrency 1-100, --objects 1-100000",
              file=sys.stderr)  # fmt: skip
        return 2
    script = make_venv(args.venv)
    work = Path(tempfile.mkdtemp(prefix="vfab-shootout-"))
    zeo = None
    try:
        zeo, port = start_zeo(work)
        config = shootout_config(work, port)
        before = run_matrix(work, args, "before")
        shootout = run_shootout(script, config, work, args)
        matrix = bracketed(before, run_matrix(work, args, "after"))
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
        f"{args.objects} objects, time per object (each side's minimum; the "
        "matrix's of a run before zodbshootout and one after), "
        f"{host.nodename} {host.machine}, {os.cpu_count()} CPUs, load "
        f"{os.getloadavg()[0]:.2f}"
    )
    print("\n".join(table(shootout, matrix, args.objects)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
