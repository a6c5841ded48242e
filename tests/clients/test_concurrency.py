"""`scale --concurrency processes|threads|greenlets`: clients cut into
processes, the drivers greenlets cannot use refused before any work, a
process's plan as it travels to a worker, and real runs against ZEO (50
greenlets checked; 200 in one process under a 1,024 file limit)."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest

from scenarios.clients import concurrency
from scenarios.clients.fleet import client_names, process_plans
from scenarios.clients.loop import ClientPlan
from scenarios.clients.process import ProcessPlan
from scenarios.load.mix import LoadConfig
from scenarios.scale.model import ScaleRun
from tests.support.cli_helpers import assert_bad_input, run_cli
from tests.support.served import ROOT, env

SHORT = ["--duration", "2", "--warmup", "0.5", "--windows", "2", "--size", "small"]


def test_clients_are_cut_into_processes() -> None:
    assert concurrency.split(5, 2) == [2, 2, 1]
    assert concurrency.split(4, 4) == [4]
    assert concurrency.split(3, 1) == [1, 1, 1]
    assert concurrency.per_process("processes", None, 8) == 1
    assert concurrency.per_process("greenlets", None, 8) == 8  # one process
    assert concurrency.per_process("threads", 50, 8) == 8
    assert concurrency.per_process("threads", 3, 8) == 3
    plans = process_plans(
        ClientPlan(LoadConfig(), 1.0, 2.0, None),
        client_names(7, range(5), "wabc123."),
        "greenlets",
        2,
        Path("/nowhere"),
        record=True,
    )
    assert [[c.name for c in p.clients] for p in plans] == [
        ["wabc123.c0", "wabc123.c1"],
        ["wabc123.c2", "wabc123.c3"],
        ["wabc123.c4"],
    ]
    assert plans[2].clients[0].seed == 7004
    assert [p.history_path for p in plans] == [
        f"/nowhere/process-{j}.jsonl" for j in range(3)
    ]


def test_a_process_plan_travels_as_json() -> None:
    """What a master sends a worker: everything but the paths, which are
    the worker's own."""
    config = LoadConfig.from_values("zeo://10.200.0.1:8100", {"browse": 0}, skew=0.5)
    plan = ProcessPlan(
        ClientPlan(config, 1.5, 10.0, 2.5, 4.0, True, "f00d", 5),
        tuple(client_names(3, range(2))),
        "threads",
        "/here/h.jsonl",
        "/here/e.txt",
    )
    import json

    back = ProcessPlan.from_json(
        json.loads(json.dumps(plan.to_json())), "/there/h.jsonl", "/there/e.txt"
    )
    assert back.plan == plan.plan and back.clients == plan.clients
    assert back.kind == "threads"
    assert (back.history_path, back.stderr_path) == ("/there/h.jsonl", "/there/e.txt")


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--clients-per-process", "4"], "processes run one client each"),
        (["--storage", "relstorage-pg", "--concurrency", "greenlets"], "pg8000"),
        (["--storage", "relstorage-mysql", "--concurrency", "greenlets"], "PyMySQL"),
        (["--storage", "relstorage-sqlite", "--concurrency", "greenlets"], "sqlite3"),
        (
            [
                "--target",
                "postgres://u@127.0.0.1:1/db?driver=psycopg2",
                "--concurrency",
                "greenlets",
            ],
            "the target: RelStorage refuses psycopg2",
        ),
        (["--master-port", "5999"], "--master-port needs --workers"),
        (
            ["--workers", "2", "--storage", "relstorage-sqlite"],
            "open files of this machine",
        ),
    ],
)
def test_what_cannot_run_so_is_refused_first(
    capsys: pytest.CaptureFixture[str], args: list[str], fragment: str
) -> None:
    name = args[args.index("--storage") + 1] if "--storage" in args else "zeo"
    from tests.conftest import factory_or_skip

    factory_or_skip(name)
    assert_bad_input(run_cli(capsys, "scale", *args), fragment)


def test_greenlets_of_a_cooperative_driver_are_taken() -> None:
    assert concurrency.greenlet_refusal("pg8000") is None
    assert concurrency.greenlet_refusal("PyMySQL") is None
    assert concurrency.target_driver("zeo://127.0.0.1:8100") == (False, None)
    assert concurrency.target_driver("mysql://root@h:1/d?driver=PyMySQL") == (
        True,
        "PyMySQL",
    )


def _low_file_limit() -> None:  # pragma: no cover - runs in the child
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))


def scale(*args: str, limit: bool = False) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scenarios.cli", "scale", *args],
        capture_output=True, text=True, timeout=300, env=env(), cwd=ROOT,
        preexec_fn=_low_file_limit if limit else None,
    )  # fmt: skip


@pytest.mark.server
@pytest.mark.subprocess
@pytest.mark.parametrize(
    ("kind", "clients", "per"),
    [("greenlets", 50, None), ("threads", 4, 2), ("greenlets", 200, None)],
)
def test_clients_sharing_a_process_are_checked(
    kind: str, clients: int, per: int | None, tmp_path: Path, no_leaked_servers: None
) -> None:
    """Every client reports its own figures and the check covers them all;
    200 greenlets in one process against ZEO stay under a 1,024 file
    limit (one ZEO connection for the process, one history file)."""
    out = tmp_path / "s.json"
    extra = [] if per is None else ["--clients-per-process", str(per)]
    proc = scale(
        "--concurrency", kind, "--clients", str(clients), *extra, *SHORT,
        "--json", str(out), "-q", limit=clients > 100,
    )  # fmt: skip
    assert "Too many open files" not in proc.stdout + proc.stderr
    # 4: operations that ran out of retries (200 greenlets on one
    # capability conflict); never a violation.
    assert proc.returncode in (0, 4), proc.stdout + proc.stderr
    (point,) = ScaleRun.load(out).points
    assert point.started == clients, point.notes
    assert point.ops > 0 and point.commits > 0
    assert point.check.checked is True and point.check.ok, point.check
    assert "consistency: 0 violations" in point.check.summary
    config = ScaleRun.load(out).metadata["config"]
    assert config["concurrency"] == kind
