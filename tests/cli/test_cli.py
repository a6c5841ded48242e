"""vfab-bench as a user runs it: a real subprocess, real exit statuses."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from scenarios.bench.phases import PHASES
from scenarios.results.files import RUN
from scenarios.results.model import RunResult
from storages.zeo import free_port
from tests.support.cli_helpers import process_hooks, process_hooks_restored, run_cli


def vfab_bench(
    *args: str, cwd: Path | None = None, path: tuple[Path, ...] = ()
) -> subprocess.CompletedProcess[str]:
    """`vfab-bench *args` in a subprocess; *path*: more PYTHONPATH entries."""
    pythonpath = [str(Path(__file__).resolve().parents[2]), *map(str, path)]
    return subprocess.run(
        [sys.executable, "-m", "scenarios.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(pythonpath)),
    )


def assert_bad_input(proc: subprocess.CompletedProcess[str], fragment: str) -> None:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert fragment in lines[0]
    assert proc.stdout == ""


@pytest.mark.subprocess
@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["run", "--storage", "oracle"], "unknown storage 'oracle'; choose from"),
        (["run", "--size", "huge"], "invalid choice: 'huge'"),
        (["run", "--repeat", "0"], "must be from 1 to"),
        (["run", "--scale", "-3"], "must be from 1 to"),
        (["run", "--size", "small", "--scale", "2"], "give --size or --scale"),
        (["run", "--zeo-address", "nohostport"], "bad ZEO address"),
        (["run", "--zeo-port", "70000"], "must be from 0 to 65,535"),
        (["run", "--batch", "-1"], "must be from 0 to"),
        (["run", "--profile", "/nonexistent/dir"], "does not exist"),
        (["report", "/nonexistent/result.json"], "cannot read"),
        (["frobnicate"], "invalid choice"),
    ],
)
def test_bad_input_is_one_line_and_status_2(
    args: list[str], fragment: str, tmp_path: Path
) -> None:
    assert_bad_input(vfab_bench(*args, cwd=tmp_path), fragment)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.subprocess
def test_unreachable_zeo_address(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    proc = vfab_bench(
        "run",
        "--storage",
        "zeo",
        "--zeo-address",
        f"127.0.0.1:{free_port()}",
        "--json",
        str(out),
    )
    assert_bad_input(proc, "cannot reach ZEO server")
    assert not out.exists()


@pytest.mark.subprocess
def test_zeo_port_in_use(busy_port: int, no_leaked_servers: None) -> None:
    port = busy_port
    proc = vfab_bench(
        "run", "--storage", "zeo", "--zeo-port", str(port), "--preset", "quick"
    )
    assert_bad_input(proc, f"port {port} on 127.0.0.1 is already in use")


@pytest.mark.subprocess
def test_existing_output_is_not_replaced(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    out.write_text("precious")
    proc = vfab_bench("run", "--storage", "memory", "--json", str(out))
    assert_bad_input(proc, "exists; use --force")
    assert out.read_text() == "precious"


@pytest.mark.subprocess
def test_run_writes_json_and_markdown(tmp_path: Path, no_leaked_servers: None) -> None:
    out, md = tmp_path / "r.json", tmp_path / "r.md"
    proc = vfab_bench(
        "run",
        "--storage",
        "memory,file",
        "--storage",
        "zeo",
        "--repeat",
        "2",
        "--warmups",
        "0",
        "--json",
        str(out),
        "--markdown",
        str(md),
    )
    assert proc.returncode == 0, proc.stderr
    assert "task:" in proc.stdout and "commit sequences" in proc.stdout
    # One progress line per round of interleaved trials, naming every storage.
    rounds = [ln for ln in proc.stderr.splitlines() if ln.startswith("round ")]
    assert len(rounds) == 2
    assert all(all(s in ln for s in ("memory", "file", "zeo")) for ln in rounds)
    data = json.loads(out.read_text())
    assert data["schema_version"] == RUN.version
    meta = data["metadata"]
    assert set(meta["versions"]) >= {"ZODB", "ZEO", "persistent", "BTrees"}
    assert meta["config"]["repeat"] == 2 and meta["config"]["seed"] == 2000
    assert meta["host"]["cpu_count"] >= 1 and meta["date"]
    # Every phase on every storage, except pack on memory (nothing to pack).
    assert len(data["results"]) == 3 * len(PHASES) - 1
    sample = data["results"][0]["samples"][0]
    assert set(sample) == {
        "wall_s",
        "cpu_s",
        "loads",
        "stores",
        "size_before_bytes",
        "size_after_bytes",
        "rss_peak_bytes",
        "cache_hits",
        "batch_commit_s",
        "gc_s",
    }
    assert meta["config"]["batch"] == 0 and meta["config"]["profile"] is False
    trials = data["trials"]
    assert [t["storage"] for t in trials] == ["memory"] * 2 + ["file"] * 2 + ["zeo"] * 2
    zeo = trials[-1]
    assert zeo["size_bytes"] > 0 and zeo["rss_peak_bytes"] > 0
    assert zeo["stats"]["server"]["commits"] >= 4
    # The warm queries read what the client cache holds.
    assert zeo["stats"]["client_cache"]["hits"] > 0
    result = RunResult.from_json(data)
    assert result.storages == ["memory", "file", "zeo"]
    text = md.read_text()
    assert "| task: | memory | file | zeo |" in text
    assert "| size on disk after the run | - |" in text

    again = vfab_bench("report", str(out))
    assert again.returncode == 0 and "commit processes" in again.stdout


@pytest.mark.subprocess
def test_help_names_every_phase_and_storage() -> None:
    proc = vfab_bench("run", "--help")
    assert proc.returncode == 0
    for word in ("vfab-bench help phases", "vfab-bench storages", "--repeat"):
        assert word in proc.stdout
    proc = vfab_bench("help", "phases")
    assert proc.returncode == 0
    for word in ("query sequences", "commit update", "pack"):
        assert word in proc.stdout


@pytest.mark.subprocess
def test_storages_command_lists_the_registry() -> None:
    proc = vfab_bench("storages")
    assert proc.returncode == 0
    assert [ln.split()[0] for ln in proc.stdout.splitlines()] == [
        "memory",
        "mapping",
        "file",
        "zlib+file",
        "bdb",
        "zeo",
        "zeo+bdb",
        "relstorage-sqlite",
        "relstorage-pg",
        "relstorage-mysql",
        "relstorage-sqlite-hp",
        "relstorage-pg-hp",
        "relstorage-mysql-hp",
    ]
    for line in proc.stdout.splitlines():
        assert line.split()[1] in ("yes", "no"), line


@pytest.mark.subprocess
def test_profile_writes_one_pstats_file_per_phase(tmp_path: Path) -> None:
    import pstats

    out = tmp_path / "prof"
    args = ("run", "--storage", "mapping", "--preset", "quick", "-q")
    proc = vfab_bench(*args, "--profile", str(out))
    assert proc.returncode == 0, proc.stderr
    files = sorted(p.name for p in out.iterdir())
    assert len(files) == len(PHASES)
    assert "mapping-small-query-processes-indexed-cold.prof" in files
    assert "mapping-small-create-users-groups.prof" in files
    stats = pstats.Stats(str(out / "mapping-small-query-processes-cold.prof"))
    assert any("query_processes" in func[2] for func in stats.stats)  # type: ignore[attr-defined]
    again = vfab_bench(*args, "--profile", str(out))
    assert_bad_input(again, "exists; use --force")


@pytest.mark.subprocess
def test_ctrl_c_stops_the_server(tmp_path: Path, no_leaked_servers: None) -> None:
    """SIGINT in the middle of a ZEO run: exit 130, one line, server gone."""
    import signal
    import time

    from tests.conftest import runzeo_pids

    before = runzeo_pids()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "scenarios.cli",
            "run",
            "--storage",
            "zeo",
            "--size",
            "medium",
            "--repeat",
            "50",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2])),
    )
    try:
        deadline = time.monotonic() + 60
        while not (runzeo_pids() - before) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert runzeo_pids() - before, "runzeo never started"
        time.sleep(0.5)  # inside a trial
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "vfab-bench: interrupted"
    assert "Traceback" not in err
    assert not (runzeo_pids() - before)


def test_in_process_runs_leave_the_process_hooks_as_they_were(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """main() installs a SIGINT handler, sys.unraisablehook and a
    lastResort filter for the whole process; process_hooks_restored (the
    autouse fixture of tests/conftest.py) puts back every one of them."""
    before = process_hooks()
    # Earlier tests ran main() in this process (test_census, for one): the
    # fixture gave this test Python's own Ctrl-C handler back.
    assert before[0] is signal.default_int_handler
    with process_hooks_restored():
        assert run_cli(capsys, "storages").status == 0
        during = process_hooks()
        assert during[0] is not before[0]  # SIGINT handler
        assert during[1] is not before[1]  # sys.unraisablehook
        assert len(during[2]) == len(before[2]) + 1  # lastResort filter
        assert during[3] != before[3]  # SIGTERM and SIGHUP handlers
    after = process_hooks()
    assert after[0] is before[0] and after[1] is before[1]
    assert after[2] == before[2] and after[3] == before[3]
