"""Short deterministic scenarios: does a shared storage keep ZODB's promises
when a commit fails, when BTrees resolve a conflict, and when a client dies
between vote and finish?

Each scenario is a plain function over a client spec (``Shared.client``: a
zeo:// or RelStorage URI, or ZConfig text; scenarios.load.target) of a
fresh shared database.  It opens as many ZODB.DBs as it needs, each with
its own TransactionManager and connection, as separate clients would (the
killed client is a child process), works under root[AREA_KEY][its name]
with plain PersistentMappings (and one OOBTree), and closes every DB it
opened, aborting first, on every path.  It returns a ScenarioResult whose
detail says what was seen, by path and value.

The steps are interleaved by hand in one thread, not raced, so each run
takes the same path and no timing decides a verdict; only the killed
client's aftermath is timed (how long another client waits to commit).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

OK = "ok"
VIOLATION = "violation"
NOT_RUN = "not run"
VERDICTS = (OK, VIOLATION, NOT_RUN)

#: The root key the scenarios write under, one PersistentMapping per
#: scenario name: never the vfab data set, so each scenario is small and
#: independent of the others and of a populated database.
AREA_KEY = "vfab-verify"

#: Seconds another client may take to commit after one was killed between
#: vote and finish: RelStorage's commit-lock-timeout (30 s by default)
#: fails a waiting writer after 30 s, so 60 s tells "waited for a lock the
#: dead client held" from "never got it".
KILLED_LIMIT_S = 60.0

#: Seconds a client open before another's commit may take to see it.
CATCH_UP_S = 10.0

#: Seconds a child process may take to start and import ZODB and its
#: storage before its own work (a busy 2-core machine takes several).
CHILD_START_S = 30.0


@dataclasses.dataclass(frozen=True)
class ScenarioResult:
    """One scenario's verdict on one storage.

    verdict: "ok" (the storage behaved as ZODB promises), "violation" (it
    did not: *detail* says what was seen) or "not run" (*detail* says why).
    """

    name: str
    verdict: str
    detail: str

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict {self.verdict!r} is not one of {VERDICTS}")

    def to_json(self) -> dict[str, str]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class Scenario:
    """A row of SCENARIOS: its name, one line saying what it checks, and
    the function (client spec -> ScenarioResult)."""

    name: str
    description: str
    run: Callable[[str], ScenarioResult]


# -- clients ----------------------------------------------------------------


@dataclasses.dataclass
class _Client:
    """One client: its own ZODB.DB, transaction manager and connection."""

    db: Any
    tm: Any
    conn: Any

    def area(self, name: str, after: bytes | None = None) -> Any:
        """A new transaction, and scenario *name*'s mapping in it; with
        *after* (a tid), once this client has seen that transaction.

        ZODB does not promise that a client sees another's commit as soon
        as it returns: a ZEO client learns of it from the server's
        invalidation message, asynchronously (ClientStorage.sync() does
        nothing), while RelStorage polls at tm.begin().  So a client that
        was open before another's commit waits for its tid, or the
        scenario's order would depend on timing."""
        deadline = time.monotonic() + CATCH_UP_S
        while True:
            # Checked before begin: begin applies what has arrived by then.
            seen = after is None or self.db.lastTransaction() >= after
            self.tm.begin()  # RelStorage polls (and catches up) here
            if seen:
                return self.conn.root()[AREA_KEY][name]
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"a client did not see transaction 0x{after.hex()} "
                    f"{CATCH_UP_S:.0f} s after its commit returned"
                )
            time.sleep(0.01)

    def close(self) -> None:
        # Abort first: closing a connection with changes pending raises.
        try:
            self.tm.abort()
        finally:
            self.conn.close()


@contextlib.contextmanager
def _clients(spec: str) -> Iterator[Callable[[], _Client]]:
    """A function that opens one more client on *spec*; every client it
    opened is aborted and closed, its DB too, when the block ends."""
    import transaction

    from scenarios.load.target import open_target

    with contextlib.ExitStack() as stack:

        def open_client() -> _Client:
            db = open_target(spec, pool_size=1)
            stack.callback(db.close)  # after the connection's close below
            tm = transaction.TransactionManager()
            client = _Client(db, tm, db.open(transaction_manager=tm))
            stack.callback(client.close)
            return client

        yield open_client


def _prepare(client: _Client, name: str, objects: dict[str, Any]) -> bytes:
    """Commit *objects* as root[AREA_KEY][name], replacing what was there;
    the transaction's tid."""
    from persistent.mapping import PersistentMapping

    client.tm.begin()
    root = client.conn.root()
    if AREA_KEY not in root:
        root[AREA_KEY] = PersistentMapping()
    area = root[AREA_KEY][name] = PersistentMapping(objects)
    client.tm.commit()
    return bytes(area._p_serial)


def _mapping(**items: Any) -> Any:
    from persistent.mapping import PersistentMapping

    return PersistentMapping(items)


def _path(name: str, *keys: str) -> str:
    return f"root[{AREA_KEY!r}][{name!r}]" + "".join(f"[{k!r}]" for k in keys)


def _error(e: BaseException) -> str:
    """An exception as one line: its type and its message's first line."""
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0]}" if text else type(e).__name__


def _raised(e: BaseException) -> str:
    """An expected failure by its type alone (a conflict's message is a
    line of oids and serials that says nothing the type does not)."""
    return type(e).__name__


def _scenario(
    name: str,
) -> Callable[[Callable[..., ScenarioResult]], Callable[..., ScenarioResult]]:
    """Turn an error before the scenario reached its point (the spec cannot
    be opened, setup failed) into "not run", saying what was raised."""

    def decorate(
        function: Callable[..., ScenarioResult],
    ) -> Callable[..., ScenarioResult]:
        @functools.wraps(function)
        def run(spec: str, *args: Any, **kwargs: Any) -> ScenarioResult:
            try:
                return function(spec, *args, **kwargs)
            except Exception as e:
                return ScenarioResult(name, NOT_RUN, f"raised {_error(e)}")

        return run

    return decorate


def _verdict(name: str, problems: list[str], fine: str) -> ScenarioResult:
    if problems:
        return ScenarioResult(name, VIOLATION, "; ".join(problems))
    return ScenarioResult(name, OK, fine)


# -- the scenarios ----------------------------------------------------------

READCURRENT = "readcurrent-then-commit"


@_scenario(READCURRENT)
def readcurrent_then_commit(spec: str) -> ScenarioResult:
    """Client 1 reads a with readCurrent and writes b; client 2 changes a
    and commits; client 1's commit must fail; after its abort client 1
    commits an unrelated change; a third client must see b unchanged."""
    name = READCURRENT
    with _clients(spec) as open_client:
        one, two = open_client(), open_client()
        tid = _prepare(
            one,
            name,
            {"a": _mapping(v=0), "b": _mapping(x="original"), "log": _mapping(n=0)},
        )
        theirs = two.area(name, after=tid)
        theirs["a"]["v"]  # loaded before client 1 reads it
        ours = one.area(name)
        a = ours["a"]
        a["v"]  # loaded: readCurrent checks the revision it was read at
        one.conn.readCurrent(a)
        ours["b"]["x"] = "failed"
        theirs["a"]["v"] = 1
        two.tm.commit()
        try:
            one.tm.commit()
        except Exception as e:
            failure = _raised(e)
        else:
            return ScenarioResult(
                name,
                VIOLATION,
                f"client 1's commit succeeded although {_path(name, 'a')}, which "
                "it read with readCurrent, was changed by client 2's commit "
                "before it",
            )
        one.tm.abort()
        log = one.area(name)["log"]
        log["n"] = 1
        try:
            one.tm.commit()
        except Exception as e:
            return ScenarioResult(
                name,
                VIOLATION,
                f"after its commit raised {failure} and it aborted, client 1 "
                f"could not commit an unrelated change: {_error(e)}",
            )
        seen = open_client().area(name, after=log._p_serial)
        x, v, n = seen["b"]["x"], seen["a"]["v"], seen["log"]["n"]
    problems = []
    if x != "original":
        problems.append(
            f"{_path(name, 'b', 'x')} is {x!r}, written by a transaction whose "
            f"commit raised {failure}"
        )
    if v != 1:
        problems.append(
            f"{_path(name, 'a', 'v')} is {v!r}: client 2's committed 1 is lost"
        )
    if n != 1:
        problems.append(
            f"{_path(name, 'log', 'n')} is {n!r}: client 1's committed 1 is lost"
        )
    return _verdict(
        name,
        problems,
        f"client 1's commit raised {failure}; a third client sees b unchanged, "
        "a and log as committed",
    )


CONFLICT = "conflict-at-vote-then-commit"


@_scenario(CONFLICT)
def conflict_at_vote_then_commit(spec: str) -> ScenarioResult:
    """Two clients change the same object; the second to commit gets a
    ConflictError, aborts and commits an unrelated change; the failed write
    must not appear and the winner's value must stay."""
    name = CONFLICT
    with _clients(spec) as open_client:
        one, two = open_client(), open_client()
        tid = _prepare(one, name, {"obj": _mapping(v="start"), "log": _mapping(n=0)})
        ours, theirs = one.area(name), two.area(name, after=tid)
        ours["obj"]["v"] = "loser"
        theirs["obj"]["v"] = "winner"
        two.tm.commit()
        try:
            one.tm.commit()
        except Exception as e:
            failure = _raised(e)
        else:
            return ScenarioResult(
                name,
                VIOLATION,
                f"client 1's commit of {_path(name, 'obj', 'v')} = 'loser' "
                "succeeded although client 2 had committed 'winner' over the "
                "revision client 1 read (a lost update, no ConflictError)",
            )
        one.tm.abort()
        log = one.area(name)["log"]
        log["n"] = 1
        try:
            one.tm.commit()
        except Exception as e:
            return ScenarioResult(
                name,
                VIOLATION,
                f"after its commit raised {failure} and it aborted, client 1 "
                f"could not commit an unrelated change: {_error(e)}",
            )
        seen = open_client().area(name, after=log._p_serial)
        v, n = seen["obj"]["v"], seen["log"]["n"]
    problems = []
    if v != "winner":
        problems.append(
            f"{_path(name, 'obj', 'v')} is {v!r}"
            + (
                f", written by a transaction whose commit raised {failure}"
                if v == "loser"
                else ""
            )
            + "; client 2 committed 'winner'"
        )
    if n != 1:
        problems.append(
            f"{_path(name, 'log', 'n')} is {n!r}: client 1's committed 1 is lost"
        )
    return _verdict(
        name,
        problems,
        f"client 1's commit raised {failure}; a third client sees the winner's "
        "value and the unrelated change",
    )


BTREE = "btree-resolved-conflict"
#: The tree's keys before the two inserts: 10 keys, one bucket (an
#: OOBTree bucket splits past 30), so both inserts touch the same bucket.
_TREE_KEYS = tuple(f"k{i:02d}" for i in range(0, 20, 2))


@_scenario(BTREE)
def btree_resolved_conflict(spec: str) -> ScenarioResult:
    """Two clients insert different keys into the same OOBTree bucket at
    once; where conflict resolution merges them both keys are there, where
    it does not the failed insert is absent and the other present."""
    from BTrees.check import check
    from BTrees.OOBTree import OOBTree

    name = BTREE
    with _clients(spec) as open_client:
        one, two = open_client(), open_client()
        tid = _prepare(one, name, {"tree": OOBTree({k: k for k in _TREE_KEYS})})
        ours, theirs = one.area(name)["tree"], two.area(name, after=tid)["tree"]
        len(ours), len(theirs)  # both loaded at the same revision
        ours["k05"] = "one"
        theirs["k13"] = "two"
        one.tm.commit()
        try:
            two.tm.commit()
        except Exception as e:
            failure: str | None = _raised(e)
            two.tm.abort()
        else:
            failure = None
        tree = open_client().area(name, after=ours._p_serial)["tree"]
        items = dict(tree.items())
        length = len(tree)
        try:
            check(tree)
            broken = None
        except AssertionError as e:
            broken = str(e).splitlines()[0] if str(e) else "AssertionError"
    where = _path(name, "tree")
    problems = []
    if broken:
        problems.append(f"{where} fails BTrees.check: {broken}")
    if length != len(items):
        problems.append(f"{where} has len() {length} but {len(items)} items")
    lost = [k for k in _TREE_KEYS if items.get(k) != k]
    if lost:
        problems.append(f"{where} lost keys nobody removed: {', '.join(lost)}")
    if items.get("k05") != "one":
        problems.append(f"{where}['k05'] (client 1's committed insert) is missing")
    if failure is None and items.get("k13") != "two":
        problems.append(
            f"{where}['k13'] is missing although client 2's commit succeeded "
            "(conflict resolved)"
        )
    if failure is not None and "k13" in items:
        problems.append(
            f"{where}['k13'] is {items['k13']!r}, written by a transaction "
            f"whose commit raised {failure}"
        )
    if failure is None:
        fine = "the conflict was resolved: both commits succeeded, both keys are there"
    else:
        fine = (
            f"not resolved: client 2's commit raised {failure}; its key is "
            "absent and client 1's is there"
        )
    return _verdict(name, problems, fine)


KILLED = "killed-between-vote-and-finish"


@_scenario(KILLED)
def killed_between_vote_and_finish(
    spec: str, limit_s: float = KILLED_LIMIT_S
) -> ScenarioResult:
    """A child client changes p and q, votes and is SIGKILLed before
    tpc_finish; a fresh client must see all of that transaction or none of
    it, and another client must commit a change to p within *limit_s*."""
    name = KILLED
    with _clients(spec) as open_client:
        _prepare(
            open_client(), name, {"p": _mapping(v="start"), "q": _mapping(v="start")}
        )
    request = {"spec": spec, "name": name}
    code, out, err = _run_child({**request, "mode": "vote-then-die"}, limit_s)
    if code != -signal.SIGKILL or "voted" not in out.split():
        why = "was still running" if code is None else f"exited with {code}"
        return ScenarioResult(
            name,
            NOT_RUN,
            f"the child client did not reach its own SIGKILL after tpc_vote: it "
            f"{why} ({_last_line(err) or 'no output'})",
        )
    with _clients(spec) as open_client:
        seen = open_client().area(name)
        p, q = seen["p"]["v"], seen["q"]["v"]
    if (p, q) == ("start", "start"):
        outcome = "none"
    elif (p, q) == ("killed", "killed"):
        outcome = "all"
    else:
        return ScenarioResult(
            name,
            VIOLATION,
            f"a fresh client sees part of the killed client's transaction: "
            f"{_path(name, 'p', 'v')} is {p!r}, {_path(name, 'q', 'v')} is {q!r} "
            "(it wrote 'killed' to both)",
        )
    code, out, err = _run_child({**request, "mode": "commit"}, limit_s)
    words = out.split()
    seconds = float(words[1]) if code == 0 and words[:1] == ["committed"] else None
    if seconds is None or seconds > limit_s:
        said = (
            f"took {seconds:.1f} s"
            if seconds is not None
            else (
                f"was still running after {limit_s:.0f} s"
                if code is None
                else f"failed: {_last_line(err) or f'exit status {code}'}"
            )
        )
        return ScenarioResult(
            name,
            VIOLATION,
            f"after the client killed between vote and finish, another client's "
            f"commit to {_path(name, 'p', 'v')} {said} (limit {limit_s:.0f} s)",
        )
    with _clients(spec) as open_client:
        p = open_client().area(name)["p"]["v"]
    if p != "after":
        return ScenarioResult(
            name,
            VIOLATION,
            f"{_path(name, 'p', 'v')} is {p!r} after another client committed "
            "'after' to it",
        )
    return ScenarioResult(
        name,
        OK,
        f"a fresh client saw {outcome} of the killed client's transaction; "
        f"another client then committed to the same object in {seconds:.2f} s",
    )


# -- the child client -------------------------------------------------------


def _last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def _run_child(request: dict[str, Any], limit_s: float) -> tuple[int | None, str, str]:
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
            "from scenarios.verify.scenarios import child_main; child_main()",
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
    name = request["name"]
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
    print(f"committed {time.monotonic() - start:.3f}", flush=True)
    conn.close()
    db.close()


# -- the table --------------------------------------------------------------

#: Every scenario, in the order of the report's rows.
SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        READCURRENT,
        "a readCurrent check fails at commit, the client aborts and commits "
        "something else: the failed write must not appear",
        readcurrent_then_commit,
    ),
    Scenario(
        CONFLICT,
        "two clients change one object, the loser aborts and commits something "
        "else: its write must not appear, the winner's must stay",
        conflict_at_vote_then_commit,
    ),
    Scenario(
        BTREE,
        "two clients insert different keys into one BTree bucket: both kept "
        "when resolved, only the winner's when not",
        btree_resolved_conflict,
    ),
    Scenario(
        KILLED,
        "a client SIGKILLed between vote and finish: all or none of its "
        "transaction, and others can commit within a bound",
        killed_between_vote_and_finish,
    ),
)


def run_scenarios(spec: str) -> list[ScenarioResult]:
    """Every scenario of SCENARIOS on the database *spec* names, in order."""
    return [scenario.run(spec) for scenario in SCENARIOS]
