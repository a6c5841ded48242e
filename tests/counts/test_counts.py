"""run --counts, count files, compare and report on them (scenarios.counts).

The tests that run valgrind or strace skip, saying so, where they are
absent; the end-to-end ones use the small size, the eight 2000 rows and one
counted trial of one storage, without warmups (a count does not need
them to reproduce).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from scenarios.counts import build, callgrind, fixed, runner, syscalls
from scenarios.counts.compare import LAYOUT_FLOOR, compare_counts
from scenarios.counts.model import CountResult, CountRun, CountSample
from scenarios.results.files import ResultsError
from scenarios.results.model import RunResult
from tests.support import slowstore
from tests.support.cli_helpers import run_cli

ROOT = Path(__file__).resolve().parents[2]


def needs(*tools: str) -> None:
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        pytest.skip(
            f"{', '.join(missing)} not installed (apt-get install valgrind strace)"
        )


def needs_extension(directory: Path) -> Path:
    try:
        return build.build(directory)
    except build.BuildError as e:
        pytest.skip(str(e))


# -- the extension -----------------------------------------------------------

COUNTED = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from scenarios.counts import build
    cg = build.load(Path(sys.argv[1]))
    assert cg.running_on_valgrind() == 1
    cg.start_instrumentation()
    for label in ("first", "second"):
        cg.dump_stats_at("vfab-skip")
        cg.zero_stats()
        squares = {str(i): i * i for i in range(5000)}
        sorted(squares.items(), key=lambda kv: kv[1] % 97)
        cg.dump_stats_at(label)
    """
)


def count_script(tmp_path: Path, name: str, ext_dir: Path) -> dict[str, int]:
    """COUNTED under callgrind, in the environment a count run gives its
    counted processes (fixed.child_environment: hash seed, bytecode read
    from a private cache a native run filled, nothing written)."""
    out = tmp_path / name
    out.mkdir()
    script = tmp_path / "counted.py"
    env = {**fixed.child_environment(tmp_path), "PYTHONPATH": str(ROOT)}
    command = [
        "valgrind",
        "--tool=callgrind",
        "--instr-atstart=no",
        f"--callgrind-out-file={out}/callgrind.out.%p",
        f"--log-file={out}/valgrind.log",
        sys.executable,
        "-P",
        str(script),
        str(ext_dir),
    ]
    subprocess.run(command, check=True, cwd=ROOT, env=env)
    dumps = callgrind.read_dumps(out, "vfab-skip")
    assert len(dumps) == 1
    return next(iter(dumps.values()))


def fill_bytecode_cache(tmp_path: Path) -> None:
    """What a count run does first: the imports, natively, writing their
    bytecode to the private cache."""
    script = tmp_path / "counted.py"
    script.write_text(COUNTED)
    (tmp_path / "tmp").mkdir()  # the private directory's TMPDIR
    env = {
        **fixed.child_environment(tmp_path, write_bytecode=True),
        "PYTHONPATH": str(ROOT),
    }
    imports = "import scenarios.counts.build"
    subprocess.run([sys.executable, "-P", "-c", imports], check=True, cwd=ROOT, env=env)


@pytest.mark.subprocess
def test_extension_natively_is_a_no_op(tmp_path: Path) -> None:
    needs_extension(tmp_path)
    cg = build.load(tmp_path)
    assert cg.running_on_valgrind() == 0
    cg.zero_stats()
    cg.dump_stats_at("nothing")


@pytest.mark.subprocess
@pytest.mark.valgrind
def test_built_from_clean_and_a_fixed_piece_of_python_counts_the_same_twice(
    tmp_path: Path,
) -> None:
    needs("valgrind")
    ext_dir = tmp_path / "built"
    path = needs_extension(ext_dir)  # a directory with nothing built in it
    assert path.parent == ext_dir and path.exists()
    fill_bytecode_cache(tmp_path)
    one = count_script(tmp_path, "one", ext_dir)
    two = count_script(tmp_path, "two", ext_dir)
    assert set(one) == {"first", "second"}
    assert one["first"] > 1_000_000
    assert one == two


def test_build_says_what_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(build, "header_present", lambda: False)
    if shutil.which(build.compiler()[0]) is None:
        pytest.skip("no C compiler")
    with pytest.raises(build.BuildError, match="apt-get install valgrind"):
        build.build(tmp_path / "fresh")


# -- reading what the tools wrote ---------------------------------------------


def test_strace_log_counts_between_marks_once_per_call(tmp_path: Path) -> None:
    log = tmp_path / "strace.log"
    log.write_text(
        textwrap.dedent(
            """\
            100 write(1, "x", 1) = 1
            100 access("/vfab-counts-mark/begin/t1p0", F_OK) = -1 ENOENT
            100 write(3, "a", 1) = 1
            101 recvfrom(4,  <unfinished ...>
            100 fsync(3) = 0
            101 <... recvfrom resumed> "b", 1, 0, NULL, NULL) = 1
            200 pwrite64(5, "c", 1, 0) = 1
            100 access("/vfab-counts-mark/end/t1p0", F_OK) = -1 ENOENT
            100 write(1, "y", 1) = 1
            """
        )
    )
    both = syscalls.read_log(log, None)["t1p0"]
    assert both["client"] == {
        "fsync": 1,
        "read": 0,
        "write": 2,
        "seek": 0,
        "send": 0,
        "recv": 1,
    }
    split = syscalls.read_log(log, {100, 101})["t1p0"]
    assert split["client"]["write"] == 1 and split["server"]["write"] == 1


# -- the model, files and compare --------------------------------------------


def count_run(commit: int, server: int | None = None, spread: int = 0) -> CountRun:
    calls = {g: 1 for g in syscalls.GROUPS}
    results = tuple(
        CountResult(
            "file",
            "small",
            phase,
            (
                CountSample(n, server, calls, None),
                CountSample(n + spread, server and server + spread, calls, None),
            ),
        )
        for phase, n in (("commit processes", commit), ("query processes", 1000))
    )
    meta = {"config": {"scale": 1, "seed": 1, "rows": "2000"}}
    return CountRun(metadata=meta, results=results)


def test_compare_counts_threshold_and_gate() -> None:
    same = compare_counts(count_run(1_000_000), count_run(1_000_000))
    assert not same.differing()
    small = compare_counts(count_run(1_000_000), count_run(1_010_000))
    assert not small.above(0.0)  # 1%: within the exact threshold
    slower = compare_counts(count_run(1_000_000), count_run(1_050_000))
    rows = [(c.row, c.what) for c in slower.above(0.02)]
    assert rows == [("commit processes", "instructions")]
    assert "1.05x more (+5.0%)" in slower.text()


def test_an_exact_cell_differs_beyond_the_layouts_spread_only() -> None:
    """What the process's layout alone moves (up to 1.9% measured over six
    layouts, docs/counts.md) is never a change, whatever --fail-above."""
    within = compare_counts(
        count_run(1_000_000), count_run(1_025_000), exact_threshold=0.01
    )
    assert not within.differing()
    cell = within.cells[0]
    assert cell.tolerance == LAYOUT_FLOOR
    assert "within ±3.0%" in cell.verdict
    beyond = compare_counts(
        count_run(1_000_000), count_run(1_035_000), exact_threshold=0.01
    )
    assert [c.row for c in beyond.differing()] == ["commit processes"]
    # A cell whose own trials spread by 5% is judged against that spread.
    spread = compare_counts(
        count_run(1_000_000, spread=50_000), count_run(1_040_000, spread=50_000)
    )
    assert not spread.differing()


def test_a_small_cell_needs_an_absolute_change_and_shows_its_digits() -> None:
    """An empty commit (a few thousand instructions) moving by 20% is a few
    hundred instructions: no change, and its line carries the digits."""
    moved = compare_counts(count_run(2_431), count_run(2_923))
    cell = moved.cells[0]
    assert cell.change is not None and cell.change > 0.2
    assert not cell.differs and not moved.above(0.02)
    assert cell.line.startswith("2,431 -> 2,923: no change")
    big = compare_counts(count_run(200_000), count_run(260_000))
    assert [c.row for c in big.above(0.02)] == ["commit processes"]
    assert big.cells[0].line.startswith("200,000 -> 260,000: 1.30x more")


def test_counts_of_another_method_are_not_compared() -> None:
    """Files counted before every phase started from a settled type cache
    move with unrelated changes: refused, saying so."""
    old = count_run(1_000_000)
    settled = dataclasses.replace(
        old, metadata={**old.metadata, "counts": {"method": runner.METHOD}}
    )
    with pytest.raises(ResultsError, match="different versions of the method"):
        compare_counts(old, settled)
    assert not compare_counts(settled, settled).differing()


def test_cells_of_a_storage_with_a_server_are_not_exact() -> None:
    run = count_run(100_000, server=50_000, spread=3_000)
    cell = run.cell("file", "commit processes", "client", "instructions")
    assert cell is not None and not cell.exact
    assert cell.tolerance(0.02) >= 0.15
    # A 5% move of a cell that is not exact is within its spread.
    moved = compare_counts(run, count_run(105_000, server=52_500, spread=3_000))
    assert not moved.above(0.02)


def test_count_file_round_trip_and_kinds(tmp_path: Path) -> None:
    run = count_run(100_000)
    path = tmp_path / "c.json"
    path.write_text(json.dumps(run.to_json()))
    assert CountRun.load(path) == run
    with pytest.raises(ResultsError, match="not a run result"):
        RunResult.load(path)
    timed = tmp_path / "t.json"
    timed.write_text(json.dumps({"schema_version": 2, "metadata": {}, "results": []}))
    with pytest.raises(ResultsError, match="not a counts result"):
        CountRun.load(timed)
    future = tmp_path / "f.json"
    future.write_text(json.dumps({**run.to_json(), "schema_version": 99}))
    with pytest.raises(ResultsError, match="unsupported schema_version 99"):
        CountRun.load(future)
    # A malformed count file names its field (the schema of CountRun).
    bad = run.to_json()
    bad["results"][0]["samples"][1]["instructions"] = -5
    future.write_text(json.dumps(bad))
    with pytest.raises(ResultsError, match=r"results\[0\]\.samples\[1\]\.instructions"):
        CountRun.load(future)


def test_compare_refuses_a_time_file_against_a_count_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    counts = tmp_path / "c.json"
    counts.write_text(json.dumps(count_run(100_000).to_json()))
    timed = tmp_path / "t.json"
    timed.write_text(json.dumps({"schema_version": 2, "metadata": {}, "results": []}))
    for pair in ((timed, counts), (counts, timed)):
        outcome = run_cli(capsys, "compare", *map(str, pair))
        assert outcome.status == 2
        lines = outcome.err.strip().splitlines()
        assert len(lines) == 1 and "a count file" in lines[0]
        assert "compare two of one kind (report --cost-model links" in lines[0]


def test_run_counts_without_valgrind_says_how_to_get_it(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    outcome = run_cli(capsys, "run", "--counts", "--storage", "mapping")
    assert outcome.status == 2
    lines = outcome.err.strip().splitlines()
    assert len(lines) == 1
    assert (
        "--counts needs valgrind" in lines[0] and "apt-get install valgrind" in lines[0]
    )


# -- end to end: a storage slowed on purpose ----------------------------------


def counted(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    extra: int,
) -> Path:
    """One run --counts of the configured column "col" on a fresh Data.fs in
    a directory whose name has the same length every time."""
    directory = tmp_path / f"db-{name}"
    directory.mkdir()
    config = tmp_path / f"{name}.conf"
    config.write_text(
        slowstore.CONFIG.format(name="col", path=directory / "Data.fs", extra=extra)
    )
    out = tmp_path / f"{name}.json"
    outcome = run_cli(
        capsys,
        "run",
        "--counts",
        "--storage-config",
        str(config),
        "--rows",
        "2000",
        "--repeat",
        "1",
        "--warmups",
        "0",
        "--json",
        str(out),
    )
    assert outcome.status == 0, outcome.err
    assert "instructions of the client process" in outcome.out
    return out


@pytest.mark.subprocess
@pytest.mark.valgrind
def test_compare_gates_on_a_storage_slowed_by_five_percent(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    needs("valgrind", "vgdb", "strace")
    needs_extension(build.cache_dir())
    monkeypatch.setenv(
        "PYTHONPATH", str(ROOT)
    )  # the children import tests.support.slowstore
    one = counted(tmp_path, capsys, "one", 0)
    two = counted(tmp_path, capsys, "two", 0)
    slow = counted(tmp_path, capsys, "slo", slowstore.EXTRA_5_PERCENT)

    same = run_cli(capsys, "compare", str(one), str(two), "--fail-above", "2%")
    assert same.status == 0, same.out + same.err

    gated = run_cli(capsys, "compare", str(one), str(slow), "--fail-above", "2%")
    assert gated.status == 1, gated.out
    # One line a CI log greps, within 100 columns; every cell on stdout.
    err = gated.err.strip().splitlines()
    assert len(err) == 1 and "grew above 2%" in err[0] and len(err[0]) <= 100, err
    assert "col commit " in err[0]
    lines = [line.strip() for line in gated.out.splitlines()]
    for row in ("commit users/groups", "commit processes", "commit sequences"):
        assert any(x.startswith(row) and "x more (+" in x for x in lines), gated.out
    for row in ("query processes", "convert processes"):
        assert f"col {row}:" not in gated.err
        assert not any(x.startswith(row) and "x more (+" in x for x in lines)
    changes = [c for c in CountRun.load(slow).results if c.phase.startswith("commit")]
    base = {c.phase: c for c in CountRun.load(one).results}
    for c in changes:
        ratio = c.samples[0].instructions / base[c.phase].samples[0].instructions
        assert 1.03 < ratio < 1.10, (c.phase, ratio)

    # The report and the page of a count file.
    shown = run_cli(capsys, "report", str(one), "--html", str(tmp_path / "c.html"))
    assert shown.status == 0 and shown.out == ""  # the page is the output
    assert "commit processes" in (tmp_path / "c.html").read_text()
    shown = run_cli(capsys, "report", str(one))
    assert shown.status == 0 and "instructions of the client process" in shown.out


def test_cost_model_from_a_time_file_and_a_count_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from scenarios.results.model import PhaseResult, Sample

    meta = {"config": {"scale": 1, "seed": 1, "batch": 0}}
    # 100 M instructions in 8.5 ms (CPU-bound, 0.085 ns each) and in 20 ms
    # (waiting: 0.2 ns each); four CPU-bound rows set the machine's figure.
    walls = {"commit processes": 0.020}
    phases = ["commit processes", *(f"query {i}" for i in range(4))]
    times = RunResult(
        metadata=meta,
        results=tuple(
            PhaseResult("file", "small", p, (Sample(walls.get(p, 0.0085), 0.008),))
            for p in phases
        ),
    )
    counts = CountRun(
        metadata=meta,
        results=tuple(
            CountResult("file", "small", p, (CountSample(100_000_000),)) for p in phases
        ),
    )
    (tmp_path / "t.json").write_text(json.dumps(times.to_json()))
    (tmp_path / "c.json").write_text(json.dumps(counts.to_json()))
    for pair in (("t.json", "c.json"), ("c.json", "t.json")):
        a, b = (str(tmp_path / n) for n in pair)
        outcome = run_cli(capsys, "report", a, "--cost-model", b)
        assert outcome.status == 0, outcome.err
        assert "this machine: 0.085 ns" in outcome.out
        line = next(ln for ln in outcome.out.splitlines() if "commit processes" in ln)
        assert "0.200 (2.4x) waits" in line
        assert "waits" not in next(
            ln for ln in outcome.out.splitlines() if ln.startswith("query 0")
        )
    both_times = run_cli(
        capsys,
        "report",
        str(tmp_path / "t.json"),
        "--cost-model",
        str(tmp_path / "t.json"),
    )
    assert both_times.status == 2 and "both are time files" in both_times.err


@pytest.mark.subprocess
@pytest.mark.valgrind
def test_pytest_benchmark_targets_counted_and_compared(tmp_path: Path) -> None:
    needs("valgrind", "vgdb", "strace")
    needs_extension(build.cache_dir())
    (tmp_path / "test_tiny.py").write_text(
        "def test_tiny(benchmark):\n"
        "    work = lambda: sorted(str(i) for i in range(3000))\n"
        "    benchmark.pedantic(work, rounds=2)\n"
        "\n"
        "def test_twice(benchmark):\n"
        "    work = lambda: sorted(str(i) for i in range(6000))\n"
        "    benchmark(work)\n"
    )
    saved = []
    for name in ("a", "b"):
        out = tmp_path / f"{name}.json"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "scenarios.counts.pytest_counts",
                "run",
                f"--benchmark-json={out}",
                "-q",
                "-p",
                "no:randomly",
                "-p",
                "no:cacheprovider",
                str(tmp_path / "test_tiny.py"),
            ],
            check=True,
            cwd=tmp_path,
            env={
                "PATH": "/usr/bin:/bin",
                "PYTHONPATH": str(ROOT),
                "HOME": str(Path.home()),
            },
        )
        benchmarks = json.loads(out.read_text())["benchmarks"]
        infos = {b["name"]: b["extra_info"] for b in benchmarks}
        assert len(infos["test_tiny"]["instructions_rounds"]) == 2
        assert infos["test_twice"]["instructions_rounds"]
        # Twice the strings to make and sort: a little over twice the count.
        ratio = infos["test_twice"]["instructions"] / infos["test_tiny"]["instructions"]
        assert 1.8 < ratio < 2.6, ratio
        saved.append(out)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "scenarios.counts.pytest_counts",
            "compare",
            *map(str, saved),
            "--fail-above",
            "2%",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    # The same code, run again: its count moves with the heap that pytest's
    # own state shapes before a target runs (the directory's entries, here
    # a.json), up to 0.7% measured on this target, never to the 3% at which
    # a count differs (docs/counts.md).
    assert "Summary: 2 cells compared; 0 more, 0 fewer, 2 no change" in done.stdout


def _benchmark_json(path: Path, counts: dict[str, int]) -> Path:
    """A --benchmark-json file with *counts* as its benchmarks'
    instructions, named and parametrized as pytest-benchmark names them
    (compare reads nothing else)."""
    benchmarks = [
        {
            "name": f"test_{name}[file]",
            "fullname": f"tests/benchmarks/test_micro.py::test_{name}[file]",
            "params": {"storage": "file"},
            "extra_info": {"instructions": n},
        }
        for name, n in counts.items()
    ]
    path.write_text(json.dumps({"benchmarks": benchmarks}))
    return path


@pytest.mark.parametrize(
    "new, fail_above, code, said",
    [
        ({"a": 1_010_000, "b": 500_000}, "2%", 0, "1.01x, within ±3.0%"),
        ({"a": 1_100_000, "b": 500_000}, "2%", 1, "grew above 2%: file a: +10.0%"),
        ({"a": 1_100_000, "b": 500_000}, "20%", 0, "1.10x more (+10.0%)"),
        ({"a": 800_000, "b": 500_000}, "2%", 0, "1.25x fewer (-20.0%)"),
        ({}, "2%", 2, "new.json: no benchmark holds instructions"),
    ],
    ids=["noise", "grew", "under-the-bar", "shrank", "empty"],
)
def test_pytest_counts_compare_verdicts(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    new: dict[str, int],
    fail_above: str,
    code: int,
    said: str,
) -> None:
    from scenarios.counts import pytest_counts

    old = _benchmark_json(tmp_path / "old.json", {"a": 1_000_000, "b": 500_000})
    argv = ["compare", str(old), str(_benchmark_json(tmp_path / "new.json", new))]
    assert pytest_counts.main([*argv, "--fail-above", fail_above]) == code
    out, err = capsys.readouterr()
    assert said in out + err
    if code == 1:  # the gate's line: one line on stderr
        assert len(err.splitlines()) == 1, err


def processes_naming(text: str) -> list[int]:
    """Pids whose command line holds *text*."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if text.encode() in (entry / "cmdline").read_bytes():
                pids.append(int(entry.name))
        except OSError:
            continue
    return pids


@pytest.mark.subprocess
@pytest.mark.valgrind
@pytest.mark.parametrize("signum", [2, 15, 1], ids=["SIGINT", "SIGTERM", "SIGHUP"])
def test_a_signal_stops_every_counted_process(tmp_path: Path, signum: int) -> None:
    import os
    import time

    needs("valgrind", "vgdb", "strace")
    needs_extension(build.cache_dir())
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    command = [sys.executable, "-m", "scenarios.cli", "run", "--counts"]
    command += ["--storage", "zeo", "--rows", "2000", "--repeat", "1", "--warmups", "0"]
    process = subprocess.Popen(
        command, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True
    )
    assert process.stderr is not None
    lines = []
    for line in process.stderr:  # until valgrind's child counts
        lines.append(line)
        if "(callgrind): counted trial" in line:
            break
    assert processes_naming(str(tmp_path)), lines
    time.sleep(2)  # inside a phase, vgdb and runzeo running
    process.send_signal(signum)
    rest = process.stderr.read()
    assert process.wait(60) == 128 + signum, rest
    deadline = time.monotonic() + 30
    while processes_naming(str(tmp_path)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert processes_naming(str(tmp_path)) == []
    assert not (tmp_path / "vfab-counts-0").exists()


@pytest.mark.subprocess
@pytest.mark.valgrind
def test_a_count_run_stops_only_what_it_started(tmp_path: Path) -> None:
    """Another user's count run whose TMPDIR merely ends in this run's
    (/x/tmp and /tmp): its processes name "/x/tmp/vfab-counts-0/", and
    stopping whatever names "/tmp/vfab-counts-0/" stopped them too."""
    import os

    needs("valgrind", "vgdb", "strace")
    needs_extension(build.cache_dir())
    ours = tmp_path / "tmp"
    ours.mkdir()
    theirs = f"/elsewhere{ours}/vfab-counts-0/job.json"
    sleeper = "import time; time.sleep(300)"
    other = subprocess.Popen([sys.executable, "-c", sleeper, theirs])
    try:
        done = subprocess.run(
            [sys.executable, "-m", "scenarios.cli", "run", "--counts", "-q"]
            + ["--storage", "memory", "--rows", "2000", "--repeat", "1"]
            + ["--warmups", "0"],
            env={**os.environ, "TMPDIR": str(ours)},
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr
        assert other.poll() is None, "the other run's process was stopped"
        assert os.listdir(ours) == []
    finally:
        other.kill()
        other.wait()


def test_receives_are_shown_never_gated_and_small_moves_of_inexact_cells_pass() -> None:
    old, new = count_run(100_000, server=50_000), count_run(100_000, server=50_000)
    bumped = CountRun(
        metadata=new.metadata,
        results=tuple(
            dataclasses.replace(
                r,
                samples=tuple(
                    dataclasses.replace(
                        s,
                        instructions=int(s.instructions * 1.5),  # +50%, +50,000
                        syscalls={**(s.syscalls or {}), "recv": 9},
                    )
                    for s in r.samples
                ),
            )
            for r in new.results
        ),
    )
    result = compare_counts(old, bumped)
    recv = [c for c in result.cells if c.what == "recv"]
    assert recv and all(not c.differs for c in recv)
    assert "depends on timing" in recv[0].verdict
    # Not exact (a server), and under NOT_EXACT_MIN_CHANGE instructions.
    assert not result.above(0.02)


def test_the_client_is_told_from_its_server_by_pid_not_by_order() -> None:
    """A runzeo dumps every label as the client does; with pids wrapped
    the server's is the lower one, and its counts were the client's."""
    from scenarios.counts.runner import assemble

    plan = {
        "pid": 32700,
        "size": "small",
        "phases": [{"trial": 1, "phase": "commit processes", "label": "t1p0"}],
        "server_pids": [200],
    }
    dumps = {200: {"t1p0": 101_000_000}, 32700: {"t1p0": 179_000_000}}
    (result,) = assemble("zeo", plan, dumps, {})
    sample = result.samples[0]
    assert sample.instructions == 179_000_000
    assert sample.server_instructions == 101_000_000


@pytest.mark.subprocess
@pytest.mark.valgrind
def test_no_two_start_up_layouts_differ_beyond_the_gate(tmp_path: Path) -> None:
    """The same code counted under six start-up layouts (seeded shifts of
    the heap and of the types' version tags, what an unrelated change does):
    no pair of them is a change the gate would report
    (tools/count_layouts.py, exit 0), and the run says it settled every
    phase's type cache."""
    needs("valgrind", "vgdb", "strace")
    needs_extension(build.cache_dir())
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import count_layouts
    finally:
        sys.path.remove(str(ROOT / "tools"))
    out = tmp_path / "layouts.json"
    status = count_layouts.main(
        ["--layouts", "6", "--storage", "memory", "--json", str(out)]
    )
    run = CountRun.load(out)
    assert status == 0
    assert run.metadata["counts"]["method"] == runner.METHOD
    assert run.metadata["counts"]["layouts"] == 6
    layouts = {s.layout for r in run.results for s in r.samples}
    assert layouts == set(range(6))


def test_only_what_the_suite_reads_reaches_a_counted_child(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A variable the suite does not read, its own prefix included, never
    reaches a counted child (one such moved a count by 1.4%); the ones it
    reads do."""
    base = fixed.child_environment(tmp_path)
    monkeypatch.setenv("VFAB_SOMETHING_ELSE", "x" * 40)
    monkeypatch.setenv("VFAB_DEBUG", "1")
    monkeypatch.setenv("EDITOR", "vi")
    monkeypatch.setenv(fixed.LAYOUT_VAR, "3")
    assert fixed.child_environment(tmp_path) == base
    monkeypatch.setenv("VFAB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PGPASSWORD", "secret")
    env = fixed.child_environment(tmp_path)
    assert env["VFAB_CACHE_DIR"] == str(tmp_path / "cache")
    assert env["PGPASSWORD"] == "secret"
