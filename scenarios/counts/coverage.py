"""What a compare of two count files could not compare, and why: cells one
file only holds, call groups the suite does not count, storages the two
files would judge by different rules (scenarios.counts.compare reports
them and exits 3: NOT FULLY CHECKED).
"""

from __future__ import annotations

from collections.abc import Collection

from scenarios.counts.model import INSTRUCTIONS, CountRun
from scenarios.counts.syscalls import GROUPS


def unknown_groups(run: CountRun, name: str) -> list[str]:
    """The call groups *run* holds that the suite does not count (a group
    renamed by hand: its calls would vanish from the compare unsaid)."""
    found: dict[str, None] = {}
    for r in run.results:
        for s in r.samples:
            for calls in (s.syscalls, s.server_syscalls):
                for group in calls or {}:
                    if group not in GROUPS:
                        found[f"{r.storage} {r.phase}: call group {group!r}"] = None
    return [f"{u} is no call group this suite counts ({name})" for u in found]


def listed_served(run: CountRun) -> list[str]:
    """The storages *run*'s metadata says talk to a server."""
    counts = run.metadata.get("counts")
    served = counts.get("served") if isinstance(counts, dict) else None
    return list(served) if isinstance(served, list) else []


def judged_apart(
    old: CountRun, new: CountRun, old_name: str, new_name: str
) -> dict[str, str]:
    """The storages both files hold whose cells the two would judge by
    different rules (one side's metadata or counts say it talks to a
    server, the other's do not), and those a file says talk to a server
    that the suite knows to have none: their cells are not compared."""
    import storages

    out: dict[str, str] = {}
    names = dict.fromkeys(r.storage for r in old.results)
    both = [n for n in names if any(r.storage == n for r in new.results)]
    for storage in both:
        a, b = old.has_server(storage), new.has_server(storage)
        known = storages.REGISTRY.get(storage)
        if a != b:
            side = old_name if a else new_name
            out[storage] = (
                f"{storage}: talks to a server in {side} only (its metadata "
                "or server counts), which changes what its cells are judged by"
            )
        elif (
            storage in listed_served(old) + listed_served(new)
            and known is not None
            and not known.starts_server
        ):
            out[storage] = (
                f"{storage}: a file's metadata says it talks to a server; "
                f"{storage} has none"
            )
    return out


def one_side_only(
    a: Collection[tuple[str, str, str]], b: Collection[tuple[str, str, str]]
) -> list[str]:
    """What of (column, row, what) cells one side only holds, said once at
    the widest: a column ("zeo (every cell)"), a row of a column both hold
    ("zeo commit processes"), a call group of a row both hold ("zeo commit
    processes (fsync calls)")."""
    out: dict[str, None] = {}
    columns = [{k[0] for k in side} for side in (a, b)]
    rows = [{k[:2] for k in side} for side in (a, b)]
    for column, row, what in sorted(set(a) ^ set(b)):
        if (column in columns[0]) != (column in columns[1]):
            out[f"{column} (every cell)"] = None
        elif ((column, row) in rows[0]) != ((column, row) in rows[1]):
            out[f"{column} {row}"] = None
        else:
            calls = "" if what == INSTRUCTIONS else f" ({what} calls)"
            out[f"{column} {row}{calls}"] = None
    return list(out)


def storage_of_column(column: str) -> str:
    """The storage a column belongs to (a server's column is its storage's)."""
    return column.removesuffix(" (server)")
