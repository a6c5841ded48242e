"""Issue 12's classes of failure, tried as a user would: a real subprocess.

Each case checks what the README promises for bad input: one line on
stderr, exit status 2, no traceback, and nothing changed that the suite did
not create (a damaged database stays byte-identical).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def vfab_bench(
    *args: str, cwd: Path | None = None, timeout: float = 300, **env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scenarios.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env=dict(os.environ, PYTHONPATH=str(ROOT), **env),
    )


def assert_one_line(proc: subprocess.CompletedProcess[str], fragment: str) -> None:
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert fragment in lines[0], proc.stderr


def tree_digest(directory: Path) -> dict[str, str]:
    """Every file below *directory* (relative name -> sha256)."""
    out = {}
    for path in sorted(directory.rglob("*")):
        if path.is_file():
            out[str(path.relative_to(directory))] = hashlib.sha256(
                path.read_bytes()
            ).hexdigest()
    return out


# -- 1. A damaged database is reported, never changed -------------------------


@pytest.fixture
def populated(populated_sets: Callable[[str], Path]) -> Path:
    """A small FileStorage data set written by `populate` (made once)."""
    directory = populated_sets("file")
    # populate leaves FileStorage's scratch and lock files; a damaged copy
    # is the Data.fs and its marker only.
    return directory


def damaged_copy(populated: Path, tmp_path: Path, how: str) -> Path:
    directory = tmp_path / "data"
    directory.mkdir()
    for name in ("Data.fs", "vfab-dataset.json"):
        (directory / name).write_bytes((populated / name).read_bytes())
    data = directory / "Data.fs"
    blob = bytearray(data.read_bytes())
    if how == "truncated":
        del blob[-300:]
    else:  # a record in the middle overwritten with garbage
        middle = len(blob) // 2
        blob[middle : middle + 64] = b"\xff" * 64
    data.write_bytes(bytes(blob))
    return directory


@pytest.mark.subprocess
@pytest.mark.parametrize("how", ["truncated", "middle"])
@pytest.mark.parametrize(
    "command", ["census", "serve", "populate", "run-uri", "run-config"]
)
def test_damaged_filestorage_is_refused_and_left_byte_identical(
    populated: Path, tmp_path: Path, how: str, command: str
) -> None:
    directory = damaged_copy(populated, tmp_path, how)
    before = tree_digest(directory)
    if command == "census":
        args = ["census", f"file://{directory / 'Data.fs'}"]
    elif command == "serve":
        args = ["serve", "--storage", "file", "--path", str(directory)]
    elif command == "run-uri":
        args = ["run", "--storage-uri", f"file://{directory / 'Data.fs'}"]
    elif command == "run-config":
        config = tmp_path / "zodb.conf"
        config.write_text(
            f"<zodb mine>\n<filestorage>\npath {directory / 'Data.fs'}\n"
            "</filestorage>\n</zodb>\n"
        )
        args = ["run", "--storage-config", str(config)]
    else:
        args = ["populate", "--storage", "file", "--path", str(directory)]
        args.append("--overwrite")
    proc = vfab_bench(*args, timeout=60)
    if how == "truncated":  # the last transaction cut short: as a crash leaves
        assert_one_line(proc, "cut by a crash")
        assert "--recover" in proc.stderr
    else:
        assert_one_line(proc, "damaged")
        assert "fsrecover" in proc.stderr
    assert tree_digest(directory) == before


@pytest.mark.subprocess
def test_census_of_a_directory_that_is_no_bdb_environment_writes_nothing(
    tmp_path: Path,
) -> None:
    (tmp_path / "notes.txt").write_text("not a database\n")
    before = tree_digest(tmp_path)
    proc = vfab_bench("census", f"bdb://{tmp_path}")
    assert_one_line(proc, "not a Berkeley DB")
    assert tree_digest(tmp_path) == before


# -- 2. Every error is one line, wherever it happens ---------------------------


@pytest.mark.subprocess
@pytest.mark.parametrize(
    "args",
    [
        ["run", "--storage", "mapping", "--preset", "quick", "-q", "--json"],
        ["run", "--storage", "mapping", "--preset", "quick", "-q", "--markdown"],
        ["sweep", "--storage", "mapping", "--objects", "100", "-q", "--json"],
        ["census", "{populated}", "--json"],
        ["sweep", "--storage", "mapping", "--objects", "100", "-q", "--plot"],
    ],
)
def test_an_output_on_a_full_disk_is_one_line(
    args: list[str], populated: Path, tmp_path: Path
) -> None:
    args = [a.format(populated=f"file://{populated / 'Data.fs'}") for a in args]
    target = "/dev/full"
    if args[-1] == "--plot":  # a plot's format comes from its suffix
        target = str(tmp_path / "full.svg")
        os.symlink("/dev/full", target)
    proc = vfab_bench(*args, target, "--force")
    assert_one_line(proc, target)
    if args[-1] == "--json":  # the work is not lost with the output
        kept = proc.stderr.rsplit("saved in ", 1)[1].strip()
        assert json.loads(Path(kept).read_text())["schema_version"]
        os.unlink(kept)


@pytest.mark.subprocess
def test_a_full_disk_is_found_before_the_work(tmp_path: Path) -> None:
    """A new output on a filesystem with no room left is refused before the
    run starts (a probe block is written and removed)."""
    full = tmp_path / "full"
    full.mkdir()
    mount = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(full)],
        capture_output=True,
    )
    if mount.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {mount.stderr.decode()}")
    try:
        (full / "filler").write_bytes(b"x" * 16384)
        proc = vfab_bench(
            "run",
            "--storage",
            "mapping",
            "--size",
            "medium",
            "--repeat",
            "3",
            "--json",
            str(full / "out.json"),
        )
        # Refused before the run: a trial prints its progress line on
        # stderr, the run its tables on stdout.
        assert_one_line(proc, "No space left on device")
        assert proc.stdout == ""
        assert sorted(p.name for p in full.iterdir()) == ["filler"]
    finally:
        subprocess.run(["umount", str(full)], check=False)


@pytest.mark.subprocess
def test_an_unsupported_plot_format_is_refused_before_the_sweep(
    tmp_path: Path,
) -> None:
    proc = vfab_bench(
        "sweep", "--storage", "mapping", "--plot", str(tmp_path / "x.txt")
    )
    # Refused up front: each point of a sweep prints its progress line on
    # stderr, the sweep its tables on stdout.
    assert_one_line(proc, "x.txt")
    assert proc.stdout == ""
    assert list(tmp_path.iterdir()) == []


@pytest.mark.subprocess
def test_report_of_a_binary_file_is_one_line() -> None:
    assert_one_line(vfab_bench("report", sys.executable), "not")


@pytest.mark.subprocess
@pytest.mark.parametrize("command", ["populate", "serve"])
def test_a_path_under_proc_is_one_line(command: str) -> None:
    proc = vfab_bench(command, "--storage", "file", "--path", "/proc/vfab-nothing")
    assert_one_line(proc, "/proc/vfab-nothing")


@pytest.mark.subprocess
def test_debug_shows_the_traceback() -> None:
    proc = vfab_bench(
        "populate", "--storage", "file", "--path", "/proc/vfab-nothing", "--debug"
    )
    assert proc.returncode == 2
    assert "Traceback" in proc.stderr


# -- 3. Values that are wrong even when they parse -----------------------------


@pytest.mark.subprocess
@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["populate", "--storage", "file", "--path", ""], "empty"),
        (["run", "--storage", ","], "no storage"),
        (["run", "--storage", "mapping,,file"], "empty"),
        (["run", "--scale", "1000000"], "estimate"),
        (["run", "--scale", "100000000000"], "must be from 1 to 1,000,000"),
    ],
)
def test_values_that_parse_but_are_wrong(
    args: list[str], fragment: str, tmp_path: Path
) -> None:
    proc = vfab_bench(*args, cwd=tmp_path, timeout=60)
    assert_one_line(proc, fragment)
    assert list(tmp_path.iterdir()) == []


# -- 4. Every signal that stops a run cleans up --------------------------------


@pytest.mark.subprocess
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signal_during_run_cleans_up(tmp_path: Path, signum: int) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "scenarios.cli", "run", "--storage", "file,zeo"]
        + ["--size", "medium", "--repeat", "5"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT), TMPDIR=str(scratch)),
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not any(scratch.iterdir()):
        time.sleep(0.05)
    time.sleep(1.0)
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signum, err
    assert "Traceback" not in err
    assert list(scratch.iterdir()) == []


@pytest.mark.subprocess
def test_a_zeo_server_killed_during_run_ends_it_in_one_line(
    no_leaked_servers: None,
) -> None:
    from tests.conftest import runzeo_pids

    before = runzeo_pids()
    proc = subprocess.Popen(
        [sys.executable, "-m", "scenarios.cli", "run", "--storage", "zeo"]
        + ["--size", "medium", "--repeat", "5", "-q"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    # Kill the first trial's server once it holds committed data (a Data.fs
    # of its pool's storages, one subdirectory each, is past 500 KB: the
    # phases are under way, not starting or closing).
    deadline = time.monotonic() + 120
    victim = None
    while victim is None and time.monotonic() < deadline:
        for pid in runzeo_pids() - before:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                config = Path(f.read().split(b"\0")[-2].decode())
            if any(
                data.stat().st_size > 500_000
                for data in config.parent.glob("*/Data.fs")
            ):
                victim = pid
        time.sleep(0.01)
    assert victim is not None, "no runzeo reached the phases"
    os.kill(victim, signal.SIGKILL)
    # Bounded, untimed: the client of a server the suite started waits 4 s
    # for it (STARTED_SERVER_WAIT_TIMEOUT_S), so a stopwatch could not tell
    # a diagnosis from a timeout; the line names the death either way.
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "zeo: phase '" in lines[0] and "runzeo was killed by SIGKILL" in lines[0]


# -- 5. Loopback wherever locust is started ------------------------------------


def _listening(port: int) -> set[str]:
    """Local addresses with a TCP socket listening on *port* (IPv4)."""
    addresses = set()
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            local, state = line.split()[1], line.split()[3]
            host, _, hexport = local.partition(":")
            if state == "0A" and int(hexport, 16) == port:
                addresses.add(".".join(str(b) for b in bytes.fromhex(host)[::-1]))
    return addresses


@pytest.mark.subprocess
def test_locust_listens_on_loopback_from_any_directory(tmp_path: Path) -> None:
    from storages.zeo import free_port

    web, master = free_port(), free_port()
    locust = Path(sys.executable).with_name("locust")
    proc = subprocess.Popen(
        [str(locust), "-f", str(ROOT / "locustfile.py"), "--master"]
        + ["--web-port", str(web), "--master-bind-port", str(master)],
        cwd=tmp_path,  # no locust.conf here
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        # a master refuses to start without the workers' token (issue 46)
        env=dict(os.environ, PYTHONPATH=str(ROOT), VFAB_WORKER_TOKEN="t" * 32),
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (
            _listening(web) and _listening(master)
        ):
            time.sleep(0.1)
        assert _listening(web) == {"127.0.0.1"}
        assert _listening(master) == {"127.0.0.1"}
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_a_ctrl_c_that_filestorage_close_swallows_is_raised_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ZODB's FileStorage.close() catches everything around saving its
    index: a Ctrl-C landing there was lost and `run` went on to its end
    (2 runs in 60 with SIGINT 0.6-1.1 s into a medium run).  Once the CLI's
    handlers are installed, the store's close raises it again."""
    import ZODB.fsIndex

    import storages
    from scenarios import interrupts

    real_save = ZODB.fsIndex.fsIndex.save

    def interrupted_save(self: object, pos: int, fname: str) -> None:
        os.kill(os.getpid(), signal.SIGINT)  # the handler runs in here
        real_save(self, pos, fname)  # type: ignore[arg-type]

    store = storages.get("file").open(tmp_path)
    store.root()["x"] = 1
    store.commit()
    monkeypatch.setattr(ZODB.fsIndex.fsIndex, "save", interrupted_save)
    interrupts.defer_interrupts()
    try:
        with pytest.raises(KeyboardInterrupt):
            store.close()
    finally:
        interrupts.forget_interrupts()
    assert store.db is None  # closed all the same
