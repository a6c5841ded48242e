"""The check's result in words a deployer acts on: first whether the data
stayed right, in plain words ("right: every read saw a committed state;
117 reads saw a state older than a commit already acknowledged to
another client, which ZEO allows"), the anomaly names after (the check's
own summary).  Every view of a consistency check says it this way:
verify's, scale's, choose's, the locustfile's log line (said())."""

from __future__ import annotations

from scenarios.checker.check import Check

#: A violation's kind in plain words: (one, many).
KIND_WORDS: dict[str, tuple[str, str]] = {
    "lost write": ("acknowledged write lost", "acknowledged writes lost"),
    "lost record": ("record that cannot be loaded", "records that cannot be loaded"),
    "phantom write": (
        "write that no committed transaction made",
        "writes that no committed transaction made",
    ),
    "corrupt value": ("value nobody wrote", "values nobody wrote"),
    "index drift": (
        "index entry out of step with its object",
        "index entries out of step with their objects",
    ),
    "lost update": (
        "update overwritten by one that never saw it",
        "updates overwritten by ones that never saw them",
    ),
    "inconsistent read": (
        "read of a state no commit made",
        "reads of a state no commit made",
    ),
    "dependency cycle": (
        "group of transactions no order of commits explains",
        "groups of transactions no order of commits explains",
    ),
    "stale read": (
        "read older than the storage promises",
        "reads older than the storage promises",
    ),
    "invalid data": ("broken BTree or value", "broken BTrees or values"),
}

#: An anomaly a storage is allowed to show, in plain words: (one, many).
ALLOWED_WORDS: dict[str, tuple[str, str]] = {
    "stale snapshot": (
        "read saw a state older than a commit already acknowledged to another client",
        "reads saw a state older than a commit already acknowledged to another client",
    ),
    "non-monotonic snapshot": (
        "read saw an older state than a read that ended before it began",
        "reads saw an older state than a read that ended before they began",
    ),
    "G2-item": (
        "pair of transactions each changed what the other read (a write skew)",
        "pairs of transactions each changed what the other read (write skews)",
    ),
}


def _counted(n: int, words: tuple[str, str]) -> str:
    return f"{n:,} {words[0] if n == 1 else words[1]}"


def _allowed(anomaly: str, n: int) -> str:
    base = anomaly.removesuffix("-realtime").removesuffix("-process")
    words = ALLOWED_WORDS.get(base)
    if words is not None:
        return _counted(n, words)
    if anomaly.endswith("-realtime"):
        return _counted(
            n,
            (
                f"group of transactions committed in another order than real "
                f"time ({anomaly})",
                f"groups of transactions committed in another order than real "
                f"time ({anomaly})",
            ),
        )
    return f"{n:,} {anomaly}"


def _who(check: Check, storage: str) -> str:
    """Who allows what was allowed: the storage named, or the promise's
    own words for it ("ZEO without server_sync: ...")."""
    if storage:
        return storage
    promise = (check.promise or "").partition(":")[0].strip()
    return promise if promise and ";" not in promise else "this storage"


def wrong_words(counts: dict[str, int]) -> str:
    """Violations by kind in plain words: "4 writes that no committed
    transaction made, 2 index entries out of step with their objects"."""
    found = [
        _counted(n, KIND_WORDS.get(kind, (kind, kind + "s")))
        for kind, n in counts.items()
        if n
    ]
    return ", ".join(found) or "a violation"


def allowed_words(allowed: dict[str, int], who: str) -> str:
    """What a storage showed that it is allowed to show, in plain words
    ("117 reads saw a state older than ..., which zeo allows"), or ""."""
    said = [_allowed(a, n) for a, n in sorted(allowed.items()) if n]
    return f"{', '.join(said)}, which {who} allows" if said else ""


def plain(check: Check, storage: str = "") -> str:
    """Whether the data stayed right, in plain words: "right: ...",
    "WRONG: ...", or "not (fully) checked: ..."; what the storage is
    allowed to show, said as allowed (by *storage*, named where given)."""
    if not check.checked:
        return "not checked: whether the data stayed right is unknown"
    if check.ok is False:
        return f"WRONG: the data did not stay right: {wrong_words(check.counts)}"
    if check.ok is None:
        head = "not fully checked: no violation in what could be checked"
    else:
        head = "right: every read saw a committed state"
    allowed = allowed_words(check.allowed or {}, _who(check, storage))
    return f"{head}; {allowed}" if allowed else head


def said(check: Check, storage: str = "") -> str:
    """The check's summary as every view prints it: plain words first,
    then the check's own (violations by kind, the anomalies' names); a
    check that did not run says only why ("consistency not checked: ...")."""
    if not check.checked:
        return check.summary
    return f"{plain(check, storage)} ({check.summary})"
