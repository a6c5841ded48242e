"""vfab-bench serve and status: a real server a user can point clients at."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import storages
from scenarios.data import datadir
from scenarios.load.mix import LoadConfig
from scenarios.load.session import preflight
from scenarios.load.status import server_status
from tests.served import ROOT, env, serve


def vfab_bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scenarios.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env(),
        cwd=ROOT,
    )


def one_line_error(proc: subprocess.CompletedProcess[str], fragment: str) -> None:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.subprocess
def test_serves_a_populated_temporary_data_set_until_sigterm() -> None:
    with serve() as served:
        assert re.fullmatch(
            r"serving small data set \(file\) on 127\.0\.0\.1:\d+\n", served.stdout[0]
        )
        status = server_status(served.host_port)
        assert status["clients"] == 0
        preflight(LoadConfig.from_values(served.address))
        shown = vfab_bench("status", "--zeo-address", served.address, "--json")
        assert shown.returncode == 0 and '"clients": 0' in shown.stdout
    data = re.search(r"data in (\S+) \(temporary", "".join(served.stderr))
    assert data and not Path(data.group(1)).exists()


@pytest.mark.subprocess
def test_keeps_and_reuses_a_path_refuses_another_size(tmp_path: Path) -> None:
    path = tmp_path / "served"
    with serve("--path", str(path)) as served:
        pass
    assert "populating the small data set" in "".join(served.stderr)
    assert (path / "Data.fs").exists()
    assert (path / datadir.MARKER).exists()  # as vfab-bench populate leaves it
    assert not (path / "zeo.conf").exists()  # runzeo's own files live elsewhere

    with serve("--path", str(path)) as served:
        pass
    assert "reusing the small data set" in "".join(served.stderr)

    refused = vfab_bench("serve", "--port", "0", "--path", str(path), "--scale", "2")
    one_line_error(refused, "already holds a file data set (small, seed 2000)")

    with serve("--path", str(path), "--scale", "2", "--overwrite") as served:
        status = server_status(served.host_port)
    assert "populating the scale 2 data set" in "".join(served.stderr)
    assert status["clients"] == 0
    assert datadir.read_marker(path)["spec"]["scale"] == 2  # type: ignore[index]


@pytest.mark.subprocess
def test_serves_what_populate_wrote_and_nothing_foreign(tmp_path: Path) -> None:
    populated = tmp_path / "populated"
    proc = vfab_bench("populate", "--storage", "file", "--path", str(populated))
    assert proc.returncode == 0, proc.stderr
    with serve("--path", str(populated)) as served:
        pass
    assert "reusing the small data set" in "".join(served.stderr)

    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    proc = vfab_bench("serve", "--port", "0", "--path", str(foreign))
    one_line_error(proc, "is not empty and holds no data set written by")
    assert [p.name for p in foreign.iterdir()] == ["notes.txt"]


@pytest.mark.subprocess
def test_ctrl_c_stops_cleanly_too() -> None:
    with serve() as served:
        served.process.send_signal(signal.SIGINT)
        assert served.process.wait(30) == 0
    assert "stopping" in "".join(served.stderr)


@pytest.mark.subprocess
def test_port_in_use_is_one_line(busy_port: int, no_leaked_servers: None) -> None:
    proc = vfab_bench("serve", "--port", str(busy_port))
    one_line_error(proc, f"port {busy_port} on 127.0.0.1 is already in use")


@pytest.mark.subprocess
def test_bdb_is_served_or_refused_with_a_reason(no_leaked_servers: None) -> None:
    factory = storages.REGISTRY.get("zeo+bdb")
    reason = factory().unavailable() if factory else "no 'zeo+bdb' storage"
    if reason is None:
        with serve("--storage", "bdb") as served:
            assert "(bdb)" in served.stdout[0]
        return
    proc = vfab_bench("serve", "--storage", "bdb", "--port", "0")
    one_line_error(proc, "storage 'bdb' is not available")


@pytest.mark.subprocess
def test_path_that_is_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    proc = vfab_bench("serve", "--port", "0", "--path", str(tmp_path / "f"))
    one_line_error(proc, "is not a directory")


@pytest.mark.subprocess
@pytest.mark.parametrize("command", ["status", "zeoloop"])
def test_unreachable_server_is_one_line(command: str) -> None:
    from storages.zeo import free_port

    proc = vfab_bench(command, "--zeo-address", f"127.0.0.1:{free_port()}")
    one_line_error(proc, "cannot reach ZEO server")
