"""RelStorage's SQLite FAQ (docs/sqlite3/faq.rst in zodb/relstorage), its
four claims about its zodbshootout matrix, stated as checks and answered
from a matrix: how many cells agree, and which do not.

A storage "wins or ties" another in a cell when its value (the matrix's
statistic of seconds per object) is no higher, or the two intervals
overlap; it "beats" it when its interval lies wholly below; "usually wins"
is winning more than half of the cells.  Cells are compared like for like:
the same benchmark, concurrency kind, concurrency and transaction size;
FileStorage has threads only, so it is compared with the others' threads.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from scenarios.matrix.model import MatrixCell, MatrixRun, objects
from scenarios.results import significance

FILE = "file"
ZEO = "zeo"
SQLITE = "relstorage-sqlite"


@dataclasses.dataclass(frozen=True)
class Answer:
    """One claim checked: the FAQ's words, the check, how many cells agree
    (None: the matrix lacks what it needs, *why*), the ones that do not."""

    claim: str
    published: str
    check: str
    agree: int | None = None
    cells: int = 0
    exceptions: tuple[str, ...] = ()
    #: Holds as published (the exceptions included).
    holds: bool | None = None
    why: str = ""

    def sentence(self) -> str:
        if self.agree is None:
            return f"{self.check}: not answered ({self.why})"
        text = f"{self.check}: {self.agree} of {self.cells} cells here"
        if self.exceptions:
            shown = "; ".join(self.exceptions[:6])
            more = len(self.exceptions) - 6
            word = "exception" if len(self.exceptions) == 1 else "exceptions"
            text += f"; the {word}: {shown}" + (f" and {more} more" if more > 0 else "")
        return f"{text} ({self._verdict()})"

    def _verdict(self) -> str:
        if self.holds:
            return "as published"
        return "not as published"


Pair = tuple[MatrixCell, MatrixCell]
Compare = Callable[[MatrixCell, MatrixCell], bool]


def _iv(cell: MatrixCell, stat: significance.Statistic) -> significance.Interval:
    return significance.interval(cell.per_object_s, stat)


def _pairs(run: MatrixRun, benchmark: str, a: str, b: str) -> list[Pair]:
    """Cells of storage *a* and *b* measured alike (file's threads only)."""
    out = []
    for c in run.results:
        if c.storage != a or c.benchmark != benchmark:
            continue
        other = run.get(b, benchmark, c.kind, c.concurrency, c.objects)
        if other is not None:
            out.append((c, other))
    return out


def _place(c: MatrixCell) -> str:
    return f"{c.axis} x {objects(c.objects)}"


def _judge(
    claim: str,
    published: str,
    check: str,
    pairs: list[Pair],
    agrees: Compare,
    expected: Callable[[MatrixCell], bool] = lambda c: False,
    usually: bool = False,
    needs: str = "",
) -> Answer:
    """An Answer over *pairs*: *agrees*(a, b) per cell; *expected*: the
    cells the FAQ names as exceptions; *usually*: holds when more than half
    agree."""
    if not pairs:
        return Answer(claim, published, check, why=f"the matrix has no {needs}")
    agree = [agrees(a, b) for a, b in pairs]
    exceptions = [_place(a) for (a, _), ok in zip(pairs, agree, strict=True) if not ok]
    n = sum(agree)
    if usually:
        holds = n * 2 > len(pairs)
    else:
        named = {_place(a) for a, _ in pairs if expected(a)}
        holds = set(exceptions) <= named
    return Answer(claim, published, check, n, len(pairs), tuple(exceptions), holds)


def answers(run: MatrixRun, stat: str | None = None) -> list[Answer]:
    """The FAQ's four claims (six checks) answered from *run*."""
    s = run.statistic(stat)

    def wins_or_ties(a: MatrixCell, b: MatrixCell) -> bool:
        x, y = _iv(a, s), _iv(b, s)
        return x.estimate <= y.estimate or x.low <= y.high

    def beats(a: MatrixCell, b: MatrixCell) -> bool:
        return _iv(a, s).high < _iv(b, s).low

    def never_beats(a: MatrixCell, b: MatrixCell) -> bool:
        return not beats(a, b)

    def big_20(c: MatrixCell) -> bool:
        return c.kind == "threads" and c.concurrency == 20 and c.objects == 100

    smallest = min(run.sizes) if run.sizes else 0

    def small(c: MatrixCell) -> bool:
        return c.objects == smallest

    out = []
    for bench, claim in (("add", "adding objects"), ("update", "updating objects")):
        out.append(
            _judge(
                claim,
                "SQLite wins every test (or at least essentially ties FileStorage) "
                "except with 20 concurrent threads adding 100 objects"
                + ("" if bench == "add" else "; updating is very similar"),
                f"SQLite wins or ties FileStorage {claim}",
                _pairs(run, bench, SQLITE, FILE),
                wins_or_ties,
                big_20,
                needs=f"{bench} cells of file and relstorage-sqlite",
            )
        )
    out.append(
        _judge(
            "write then read",
            "FileStorage usually wins",
            "FileStorage wins or ties SQLite writing then reading",
            _pairs(run, "write-read", FILE, SQLITE),
            wins_or_ties,
            usually=True,
            needs="write-read cells of file and relstorage-sqlite",
        )
    )
    out.append(
        _judge(
            "write then read",
            "SQLite holds its own against ZEO, except when transaction sizes are small",
            "SQLite wins or ties ZEO writing then reading",
            _pairs(run, "write-read", SQLITE, ZEO),
            wins_or_ties,
            small,
            needs="write-read cells of zeo and relstorage-sqlite",
        )
    )
    out.append(
        _judge(
            "cold reads",
            "SQLite outperforms ZEO",
            "SQLite beats ZEO reading cold",
            _pairs(run, "cold", SQLITE, ZEO),
            beats,
            needs="cold cells of zeo and relstorage-sqlite",
        )
    )
    out.append(
        _judge(
            "cold reads",
            "FileStorage usually wins; the best RelStorage can do is tie",
            "SQLite at best ties FileStorage reading cold (never beats it)",
            _pairs(run, "cold", SQLITE, FILE),
            never_beats,
            needs="cold cells of file and relstorage-sqlite",
        )
    )
    return out


def versions_line(run: MatrixRun) -> str:
    """The versions and machine the answers hold for."""
    meta = run.metadata
    v = meta.get("versions") or {}
    names = ("ZODB", "ZEO", "RelStorage", "persistent")
    parts = [f"{n} {v[n]}" for n in names if v.get(n)]
    python = (meta.get("python") or {}).get("version")
    host = meta.get("host") or {}
    machine = f"{host.get('machine', '?')}, {host.get('cpu_count', '?')} CPUs"
    return f"Python {python}, " + ", ".join(parts) + f"; {machine}"
