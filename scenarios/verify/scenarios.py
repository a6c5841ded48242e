"""Short deterministic scenarios: does a shared storage keep ZODB's promises
when a commit fails, when BTrees resolve a conflict, and when a client dies
between vote and finish?

Each scenario is a plain function over a client spec (``Shared.client``: a
zeo:// or RelStorage URI, or ZConfig text; scenarios.load.target) of a
fresh shared database.  It opens as many ZODB.DBs as it needs, each with
its own TransactionManager and connection, as separate clients would (the
killed client is a child process: child.py), works under
root['vfab-verify'][its name] with plain PersistentMappings and one
OOBTree (clients.py), and closes every DB it opened, aborting first, on
every path.  It returns a ScenarioResult whose detail says what was seen,
by path and value; an error before it could look ("cannot open target",
a setup commit that failed) is "not run", with the error.

The steps are interleaved by hand in one thread, not raced, so each run
takes the same path and no timing decides a verdict; only the killed
client's aftermath is timed (how long another client waits to commit).
"""

from __future__ import annotations

import dataclasses
import functools
import signal
from collections.abc import Callable
from typing import Any

from scenarios.verify.child import last_line, run_child
from scenarios.verify.clients import (
    Client,
    clients,
    error_line,
    key,
    mapping,
    path,
    prepare,
    remove_areas,
    tagged,
)
from vfab.codec import Json

OK = "ok"
VIOLATION = "violation"
NOT_RUN = "not run"
VERDICTS = (OK, VIOLATION, NOT_RUN)

#: Seconds another client may take to commit after one was killed between
#: vote and finish: RelStorage's commit-lock-timeout (30 s by default)
#: fails a waiting writer after 30 s, so 60 s tells "waited for a lock the
#: dead client held" from "never got it".
KILLED_LIMIT_S = 60.0


@dataclasses.dataclass(frozen=True)
class ScenarioResult(Json):
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


@dataclasses.dataclass(frozen=True)
class Scenario:
    """A row of SCENARIOS: its name, one line saying what it checks, and
    the function (client spec -> ScenarioResult)."""

    name: str
    description: str
    run: Callable[[str], ScenarioResult]


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
                return ScenarioResult(name, NOT_RUN, f"raised {error_line(e)}")

        return run

    return decorate


def _verdict(name: str, problems: list[str], fine: str) -> ScenarioResult:
    if problems:
        return ScenarioResult(name, VIOLATION, "; ".join(problems))
    return ScenarioResult(name, OK, fine)


def _commit_unrelated(one: Client, name: str, failure: str) -> bytes | ScenarioResult:
    """After its commit raised *failure*, client *one* aborts and commits
    an unrelated change (log n = 1): the tid of that commit, or the
    violation when it cannot."""
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
            f"could not commit an unrelated change: {error_line(e)}",
        )
    serial: bytes = log._p_serial
    return serial


def _unrelated_lost(name: str, n: object) -> list[str]:
    """The problem when a third client does not see _commit_unrelated's 1."""
    if n == 1:
        return []
    return [f"{path(name, 'log', 'n')} is {n!r}: client 1's committed 1 is lost"]


# -- the scenarios ----------------------------------------------------------

READCURRENT = "readcurrent-then-commit"


@_scenario(READCURRENT)
def readcurrent_then_commit(spec: str) -> ScenarioResult:
    """Client 1 reads a with readCurrent and writes b; client 2 changes a
    and commits; client 1's commit must fail; after its abort client 1
    commits an unrelated change; a third client must see b unchanged."""
    name = READCURRENT
    with clients(spec) as open_client:
        one, two = open_client(), open_client()
        tid = prepare(
            one,
            name,
            {"a": mapping(v=0), "b": mapping(x="original"), "log": mapping(n=0)},
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
                f"client 1's commit succeeded although {path(name, 'a')}, which "
                "it read with readCurrent, was changed by client 2's commit "
                "before it",
            )
        committed = _commit_unrelated(one, name, failure)
        if isinstance(committed, ScenarioResult):
            return committed
        seen = open_client().area(name, after=committed)
        x, v, n = seen["b"]["x"], seen["a"]["v"], seen["log"]["n"]
    problems = []
    if x != "original":
        problems.append(
            f"{path(name, 'b', 'x')} is {x!r}, written by a transaction whose "
            f"commit raised {failure}"
        )
    if v != 1:
        problems.append(
            f"{path(name, 'a', 'v')} is {v!r}: client 2's committed 1 is lost"
        )
    problems += _unrelated_lost(name, n)
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
    with clients(spec) as open_client:
        one, two = open_client(), open_client()
        tid = prepare(one, name, {"obj": mapping(v="start"), "log": mapping(n=0)})
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
                f"client 1's commit of {path(name, 'obj', 'v')} = 'loser' "
                "succeeded although client 2 had committed 'winner' over the "
                "revision client 1 read (a lost update, no ConflictError)",
            )
        committed = _commit_unrelated(one, name, failure)
        if isinstance(committed, ScenarioResult):
            return committed
        seen = open_client().area(name, after=committed)
        v, n = seen["obj"]["v"], seen["log"]["n"]
    problems = []
    if v != "winner":
        problems.append(
            f"{path(name, 'obj', 'v')} is {v!r}"
            + (
                f", written by a transaction whose commit raised {failure}"
                if v == "loser"
                else ""
            )
            + "; client 2 committed 'winner'"
        )
    problems += _unrelated_lost(name, n)
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
    with clients(spec) as open_client:
        one, two = open_client(), open_client()
        tid = prepare(one, name, {"tree": OOBTree({k: k for k in _TREE_KEYS})})
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
    where = path(name, "tree")
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
    with clients(spec) as open_client:
        prepare(open_client(), name, {"p": mapping(v="start"), "q": mapping(v="start")})
    request = {"spec": spec, "name": name, "tag": key(name)[len(name) :]}
    code, out, err = run_child({**request, "mode": "vote-then-die"}, limit_s)
    if code != -signal.SIGKILL or "voted" not in out.split():
        why = "was still running" if code is None else f"exited with {code}"
        return ScenarioResult(
            name,
            NOT_RUN,
            f"the child client did not reach its own SIGKILL after tpc_vote: it "
            f"{why} ({last_line(err) or 'no output'})",
        )
    with clients(spec) as open_client:
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
            f"{path(name, 'p', 'v')} is {p!r}, {path(name, 'q', 'v')} is {q!r} "
            "(it wrote 'killed' to both)",
        )
    code, out, err = run_child({**request, "mode": "commit"}, limit_s)
    words = out.split()
    seconds = float(words[1]) if code == 0 and words[:1] == ["committed"] else None
    if seconds is None or seconds > limit_s:
        said = (
            f"took {seconds:.1f} s"
            if seconds is not None
            else (
                f"was still running after {limit_s:.0f} s"
                if code is None
                else f"failed: {last_line(err) or f'exit status {code}'}"
            )
        )
        return ScenarioResult(
            name,
            VIOLATION,
            f"after the client killed between vote and finish, another client's "
            f"commit to {path(name, 'p', 'v')} {said} (limit {limit_s:.0f} s)",
        )
    with clients(spec) as open_client:
        p = open_client().area(name)["p"]["v"]
    if p != "after":
        return ScenarioResult(
            name,
            VIOLATION,
            f"{path(name, 'p', 'v')} is {p!r} after another client committed "
            "'after' to it",
        )
    return ScenarioResult(
        name,
        OK,
        f"a fresh client saw {outcome} of the killed client's transaction; "
        f"another client then committed to the same object in {seconds:.2f} s",
    )


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


def run_scenarios(spec: str, tag: str = "") -> list[ScenarioResult]:
    """Every scenario of SCENARIOS on the database *spec* names, in order;
    with *tag* (a database others may use at once: a --target), each in an
    area of its own, removed afterwards."""
    with tagged(tag):
        results = [scenario.run(spec) for scenario in SCENARIOS]
        if tag:
            try:
                remove_areas(spec, [s.name for s in SCENARIOS])
            except Exception:  # what a scenario found matters more than this
                pass
    return results
