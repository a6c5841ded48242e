"""vfab-bench serve and status: a real server a user can point clients at."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

import storages
from scenarios.data import datadir
from scenarios.load.mix import LoadConfig
from scenarios.load.session import preflight
from scenarios.load.zeo_status import server_status
from tests.support.served import ROOT, env, serve


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


# -- the address serve listens on (issues 26 and 28) ---------------------------


def ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.server
@pytest.mark.subprocess
def test_serves_on_ipv6_loopback_and_clients_reach_it() -> None:
    """serve --host ::1 (it built the data set, then failed "Address family
    not supported"); census and zeoloop reach [::1]:PORT (they said "bad
    port in 'zeo://::1:PORT'")."""
    if not ipv6_loopback():
        pytest.skip("no IPv6 loopback here")
    with serve("--host", "::1") as served:
        assert re.fullmatch(
            r"serving small data set \(file\) on \[::1\]:\d+\n", served.stdout[0]
        )
        address = served.address
        for args in (
            ["census", "--zeo-address", address],
            ["census", f"zeo://{address}"],
            ["zeoloop", "--target", address, "--users", "1", "--duration", "1"],
        ):
            proc = vfab_bench(*args)
            assert proc.returncode == 0, (args, proc.stderr)
            assert "bad port" not in proc.stderr
    assert "not loopback" not in "".join(served.stderr)


@pytest.mark.server
@pytest.mark.subprocess
def test_serves_on_the_loopback_address_it_is_given() -> None:
    """127.0.0.2 (loopback, not the default): runzeo listens there and
    only there, and nothing is said about exposure."""
    with serve("--host", "127.0.0.2") as served:
        host, port = served.host_port
        assert host == "127.0.0.2"
        with socket.create_connection((host, port), timeout=5):
            pass
        with (
            pytest.raises(OSError),
            socket.create_connection(("127.0.0.1", port), timeout=5),
        ):
            pass
    assert "not loopback" not in "".join(served.stderr)


@pytest.mark.subprocess
@pytest.mark.parametrize(
    "host, fragment",
    [
        ("no-such-host.invalid", "the name does not resolve"),
        ("192.0.2.1", "cannot listen on 192.0.2.1:"),  # TEST-NET: not ours
        ("[::1", "the name does not resolve"),
    ],
)
@pytest.mark.parametrize("port", ["8100", "0"])
def test_a_host_it_cannot_listen_on_is_refused_before_the_work(
    tmp_path: Path, host: str, fragment: str, port: str
) -> None:
    path = tmp_path / "data"
    proc = vfab_bench("serve", "--host", host, "--port", port, "--path", str(path))
    one_line_error(proc, fragment)
    assert not path.exists()


@pytest.mark.subprocess
def test_a_storage_without_a_server_refuses_host_and_port(tmp_path: Path) -> None:
    factory = storages.get("relstorage-sqlite")
    if factory.unavailable():
        pytest.skip(factory.unavailable() or "")
    proc = vfab_bench("serve", "--storage", "relstorage-sqlite", "--host", "::1")
    one_line_error(proc, "relstorage-sqlite has no server to listen")


@pytest.mark.server
@pytest.mark.subprocess
def test_any_address_but_loopback_is_said_to_expose_the_database(
    tmp_path: Path,
) -> None:
    """The warning serve prints for an address that is not loopback, seen
    without binding a real interface: 127.0.0.2 taken for one that is not
    (storages.ports.is_loopback answering no)."""
    script = tmp_path / "serve_exposed.py"
    script.write_text(
        "import storages.ports\n"
        "storages.ports.is_loopback = lambda host: False\n"
        "from scenarios.cli import main\n"
        "raise SystemExit(main(['serve', '--host', '127.0.0.2', '--port', '0']))\n"
    )
    process = subprocess.Popen(
        [sys.executable, str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env(),
        cwd=ROOT,
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().startswith("serving ")
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert (
        "listening on 127.0.0.2:" in err
        and "not loopback: anyone who reaches it can read and change the "
        "database, unauthenticated"
        in err
    ), err


def test_loopback_is_told_from_the_rest() -> None:
    from storages.ports import exposed, host_port, is_loopback

    assert is_loopback("127.0.0.2") and is_loopback("localhost")
    assert not is_loopback("192.0.2.1") and not is_loopback("0.0.0.0")
    assert exposed("127.0.0.1", 8100) is None
    warning = exposed("0.0.0.0", 8100)
    assert warning is not None and "unauthenticated" in warning
    assert host_port("::1", 8100) == "[::1]:8100"


def test_addresses_with_ipv6_hosts_are_read_and_written_with_brackets() -> None:
    from storages.ports import uri_address
    from storages.relstorage.uri import relstorage_uri
    from storages.zeo import address_uri, parse_address

    assert parse_address("[::1]:8100") == ("::1", 8100)
    assert parse_address("127.0.0.1:8100") == ("127.0.0.1", 8100)
    assert address_uri(("::1", 8100)) == "zeo://[::1]:8100"
    assert uri_address("zeo://[::1]:8100", 9991) == ("::1", 8100)
    uri = relstorage_uri("postgresql", False, "psycopg2", host="::1", port=5432)
    assert uri.startswith("postgres://[::1]:5432/")
    with pytest.raises(storages.StorageError, match="expected HOST:PORT"):
        parse_address("[::1]8100")


@pytest.mark.server
@pytest.mark.subprocess
@pytest.mark.parametrize(
    "storage, host",
    [
        ("relstorage-pg", "127.0.0.2"),
        ("relstorage-mysql", "127.0.0.2"),
        ("relstorage-pg", "::1"),
    ],
)
def test_a_relstorage_server_listens_where_it_is_told(
    storage: str, host: str, no_leaked_servers: None
) -> None:
    """PostgreSQL's listen_addresses and MariaDB's bind-address are serve's
    --host and --port (they listened on 127.0.0.1, a free port, whatever
    was asked)."""
    from storages.zeo import free_port

    factory = storages.get(storage)
    if factory.unavailable():
        pytest.skip(factory.unavailable() or "")
    if ":" in host and not ipv6_loopback():
        pytest.skip("no IPv6 loopback here")
    port = free_port(host)
    process = subprocess.Popen(
        [sys.executable, "-m", "scenarios.cli", "serve", "--storage", storage]
        + ["--host", host, "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env(),
        cwd=ROOT,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        assert line.startswith("serving ") and f"@{where}/" in line, line
        with socket.create_connection((host, port), timeout=5):
            pass
        if host != "::1":
            with (
                pytest.raises(OSError),
                socket.create_connection(("127.0.0.1", port), timeout=5),
            ):
                pass
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert "not loopback" not in err
