"""The child client of killed-between-vote-and-finish: a Python process that
opens the client spec, votes a transaction and SIGKILLs itself before
tpc_finish (or, afterwards, commits to the same object and says how long
the commit took).  run_child() starts it, and kills and reaps it on every
path.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from scenarios.verify.clients import AREA_KEY

#: Seconds a child process may take to start and import ZODB and its
#: storage before its own work (a busy 2-core machine takes several).
CHILD_START_S = 30.0


def last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def run_child(request: dict[str, Any], limit_s: float) -> tuple[int | None, str, str]:
    """Run child_main() in a new Python process with *request* on its stdin:
    (exit status, None if it had to be killed after CHILD_START_S +
    *limit_s*; stdout; stderr).  The child is killed and reaped on every
    path, Ctrl-C included."""
    # The spec travels on stdin, not argv, where `ps` would show a password.
    root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (root, env.get("PYTHONPATH", "")) if p
    )
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from scenarios.verify.child import child_main; child_main()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        out, err = process.communicate(
            json.dumps(request), timeout=CHILD_START_S + limit_s
        )
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        return None, out, err
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return process.returncode, out, err


def child_main() -> None:
    """The child client of killed-between-vote-and-finish (the request, a
    JSON object, on stdin).  mode "vote-then-die": change p and q, run the
    two-phase commit by hand through the Connection's data-manager API,
    print "voted" and SIGKILL itself before tpc_finish.  mode "commit":
    change p and commit, print "committed SECONDS" (the commit alone)."""
    import transaction

    from scenarios.load.target import open_target

    request = json.loads(sys.stdin.read())
    name = request["name"] + request.get("tag", "")
    db = open_target(request["spec"], pool_size=1)
    tm = transaction.TransactionManager()
    conn = db.open(transaction_manager=tm)
    txn = tm.begin()
    area = conn.root()[AREA_KEY][name]
    if request["mode"] == "vote-then-die":
        area["p"]["v"] = area["q"]["v"] = "killed"
        txn.note(f"{name}: killed before tpc_finish")
        conn.tpc_begin(txn)
        conn.commit(txn)
        conn.tpc_vote(txn)
        print("voted", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(60)  # never reached: SIGKILL cannot be caught
        raise SystemExit("SIGKILL did not kill the child")
    area["p"]["v"] = "after"
    start = time.monotonic()
    tm.commit()
    print(f"committed {time.monotonic() - start:.6f}", flush=True)
    conn.close()
    db.close()
