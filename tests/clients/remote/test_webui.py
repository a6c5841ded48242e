"""The locust web UI in a real browser: Debian's chromium driven by Playwright.

Never downloads a browser: Playwright launches /usr/bin/chromium (install it
with `apt-get install chromium`; .ci/run does).  Skips, saying why, when
chromium or the playwright package is missing.  The screenshot it takes is
left in results/test-artifacts/ (ignored by git).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from scenarios.load.mix import OPERATIONS
from storages.zeo import free_port
from tests.conftest import CHROMIUM
from tests.support.served import LOCUST, ROOT, Served, env, locust_pids, serve
from tests.support.tiers import starts

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-extensions",
    "--no-first-run",
]
ARTIFACTS = ROOT / "results" / "test-artifacts"


@pytest.fixture
@starts("subprocess")
def served() -> Iterator[Served]:
    if not LOCUST.exists():
        pytest.skip("locust is not installed (the 'locust' extra)")
    with serve() as s:
        yield s


@contextmanager
def web_ui_of(args: list[str], log: Path) -> Iterator[tuple[str, Path, Any]]:
    """`locust -f locustfile.py ARGS` with its web UI, once it answers;
    killed (its whole group) if the test did not stop it."""
    port = free_port()
    with open(log, "w") as out:
        process = subprocess.Popen(
            [str(LOCUST), "-f", "locustfile.py", "--web-port", str(port), *args],
            stdout=out, stderr=subprocess.STDOUT, env=env(), cwd=ROOT,
            start_new_session=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, log.read_text()
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/", log, process
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@pytest.fixture
def web_ui(served: Served, tmp_path: Path) -> Iterator[tuple[str, Path, Any]]:
    """locust with its web UI (two worker processes), stopped with Ctrl-C."""
    args = ["--processes", "2", "--zeo-address", served.address]
    with web_ui_of(args, tmp_path / "locust.log") as ui:
        yield ui


def stats_rows(page: Any) -> dict[tuple[str, str], int]:
    """(type, name) -> request count, from the statistics table."""
    rows = {}
    for text in page.locator("table tbody tr").all_inner_texts():
        cells = [c.strip() for c in text.split("\t")]
        if len(cells) > 2 and cells[2].isdigit():
            rows[(cells[0], cells[1])] = int(cells[2])
    return rows


@pytest.mark.subprocess
@pytest.mark.browser
def test_web_ui_runs_a_swarm(
    playwright: Any,
    web_ui: tuple[str, Path, Any],
    served: Served,
    no_leaked_servers: None,
) -> None:
    url, log, process = web_ui
    browser = playwright.chromium.launch(
        executable_path=str(CHROMIUM), args=CHROMIUM_ARGS
    )
    try:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(url)

        # The target in effect is locust's Host: no "no host" banner.
        assert page.locator("input[name=host]").input_value() == served.address
        assert page.get_by_text("has no host attribute set").count() == 0

        # Our options are in the form; the target has one field, the Host.
        page.get_by_text("Custom parameters").click()
        for name in ("zeoAddress", "target"):
            assert page.locator(f"input[name={name}]").count() == 0, name
        for name in ["skew", "retries", "backoffMs"] + [
            "weight" + op.name.title().replace("_", "") for op in OPERATIONS
        ]:
            assert page.locator(f"input[name={name}]").count() == 1, name

        # The form reaches the users: browse switched off from here.
        page.fill("input[name=userCount]", "4")
        page.fill("input[name=spawnRate]", "4")
        page.fill("input[name=weightBrowse]", "0")
        page.get_by_role("button", name="Start").click()

        wanted = {
            ("zodb", op.name) for op in OPERATIONS if op.weight and op.name != "browse"
        }
        deadline = time.monotonic() + 30
        while True:
            rows = stats_rows(page)
            if all(rows.get(key, 0) > 0 for key in wanted):
                break
            assert time.monotonic() < deadline, rows
            page.wait_for_timeout(250)
        assert ("zodb", "browse") not in rows

        page.get_by_role("button", name="Stop").click()
        page.get_by_text("STOPPED").first.wait_for(timeout=30_000)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "webui.png"), full_page=True)
    finally:
        browser.close()

    # Ctrl-C: locust checks the data's invariants and exits.
    os.killpg(process.pid, signal.SIGINT)
    code = process.wait(60)
    output = log.read_text()
    assert code == 0, output[-3000:]
    assert "consistency: 0 violations" in output, output[-3000:]
    assert "did not send their history" not in output, output[-3000:]
    for trouble in ("never awaited", "Task was destroyed", "Traceback"):
        assert trouble not in output, output[-3000:]
    assert not locust_pids(), "locust processes outlived Ctrl-C"


def template_args(url: str) -> dict[str, Any]:
    """What locust's web UI page is built from (window.templateArgs)."""
    with urllib.request.urlopen(url, timeout=10) as r:
        page = r.read().decode()
    start = page.index("templateArgs = ") + len("templateArgs = ")
    args, _ = json.JSONDecoder().raw_decode(page[start:])
    return dict(args)


def post(url: str, form: dict[str, str]) -> dict[str, Any]:
    data = urllib.parse.urlencode(form).encode()
    with urllib.request.urlopen(url, data=data, timeout=10) as r:
        return dict(json.loads(r.read()))


@pytest.fixture
def web_ui_elsewhere(served: Served, tmp_path: Path) -> Iterator[tuple[str, Path, Any]]:
    """locust's web UI (two worker processes) started with --target naming
    a port nobody serves: the user names the server in the form."""
    args = ["--processes", "2", "--target", f"127.0.0.1:{free_port()}"]
    with web_ui_of(args, tmp_path / "locust.log") as ui:
        yield ui


@pytest.mark.subprocess
def test_the_form_names_the_target_once(
    web_ui_elsewhere: tuple[str, Path, Any], served: Served, no_leaked_servers: None
) -> None:
    """The form offered Host, Target and Zeo Address; now the Host alone,
    and what is typed there is the target, over --target's."""
    url, log, process = web_ui_elsewhere
    args = template_args(url)
    assert not {"target", "zeo_address"} & set(args["extra_options"]), args
    assert {"skew", "retries"} <= set(args["extra_options"])
    got = post(
        url + "swarm", {"user_count": "2", "spawn_rate": "2", "host": served.address}
    )
    assert got.get("success"), got
    deadline = time.monotonic() + 30
    while True:
        with urllib.request.urlopen(url + "stats/requests", timeout=10) as r:
            stats = json.loads(r.read())
        done = sum(
            row["num_requests"] for row in stats["stats"] if row["method"] == "zodb"
        )
        if done > 0:
            break
        assert time.monotonic() < deadline, (stats, log.read_text()[-3000:])
        time.sleep(0.5)
    assert stats["total_fail_per_sec"] == 0 and not stats["errors"], stats
    with urllib.request.urlopen(url + "stop", data=b"", timeout=30) as r:
        assert json.loads(r.read())["success"]
    while stats["state"] != "stopped":
        assert time.monotonic() < deadline + 30, stats
        time.sleep(0.5)
        with urllib.request.urlopen(url + "stats/requests", timeout=10) as r:
            stats = json.loads(r.read())
    os.killpg(process.pid, signal.SIGINT)
    code = process.wait(60)
    output = log.read_text()
    ours = "\n".join(ln for ln in output.splitlines() if "/vfab" in ln)
    assert code == 0, ours or output[-3000:]
    assert "consistency: 0 violations" in output, output[-3000:]
    assert not locust_pids(), "locust processes outlived Ctrl-C"
