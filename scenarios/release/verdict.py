"""One release against the last: a verdict per part and one at the top.  The
gate is what does not flake: a count cell grown above the threshold, or a
storage newly WRONG (exit 1); wall time, the curve and the million run are
reported, never gated (docs/internals.md).
"""

from __future__ import annotations

import dataclasses
import textwrap
from typing import Any, ClassVar

from scenarios.ab.judge import Judged
from scenarios.counts.compare import (
    LAYOUT_FLOOR,
    CountComparison,
    CountDifference,
    compare_benchmarks,
    compare_counts,
)
from scenarios.errors import EXIT_INVARIANTS, EXIT_OK, EXIT_VIOLATIONS
from scenarios.release import paired as pairs
from scenarios.release.measures import (
    CHANGE,
    GATE,
    NAMED,
    QUIET,
    SEE_WALL,
    Consistency,
    Line,
    PerObject,
    machine,
    machine_words,
    per_object,
    states,
    tally,
    timing_not_comparable,
)
from scenarios.release.model import Release
from scenarios.results.compare_runs import RunComparison, compare_files
from scenarios.results.files import ResultsError
from scenarios.results.formatter import plural
from scenarios.results.metadata import differences
from scenarios.results.table import WIDTH
from scenarios.scale.compare import ScaleComparison, compare_scale
from vfab.codec import Derived

#: The default --fail-above: a count change the gate calls a regression
#: (docs/counts.md: below 2% CPython's memory layout moves single phases).
DEFAULT_FAIL_ABOVE = 0.02


#: The column of a micro-benchmark cell's storage, as the verdict names it.
MICRO = " (micro-benchmark)"


def storage_of(c: CountDifference) -> str:
    """The storage a cell belongs to (a server's cells are its storage's)."""
    return c.column.removesuffix(MICRO).removesuffix(" (server)")


def _size(c: CountDifference) -> float:
    change = c.change
    return float("inf") if change is None else abs(change)


def _span(cells: list[CountDifference]) -> str:
    """ "+5.1%" or "+5.1 to +7.9%" (the cells' changes)."""
    changes = sorted(c.change for c in cells if c.change is not None)
    if not changes:
        return "new"
    low, high = changes[0] * 100, changes[-1] * 100
    return (
        f"{low:+.1f}%"
        if f"{low:+.1f}" == f"{high:+.1f}"
        else (f"{low:+.1f} to {high:+.1f}%")
    )


def by_storage(cells: list[CountDifference]) -> str:
    """The cells grouped by storage, the storage that moved most first and
    each storage's cells by the size of their change: "slow: 3 cells +5.1
    to +7.9% (commit processes +7.9%, ...)"."""
    groups: dict[str, list[CountDifference]] = {}
    for c in sorted(cells, key=_size, reverse=True):
        groups.setdefault(storage_of(c), []).append(c)
    parts = []
    for storage, group in groups.items():
        named = ", ".join(
            f"{c.cell_name.removeprefix(storage + ' ')} "
            f"{'new' if c.change is None else f'{c.change * 100:+.1f}%'}"
            for c in group[:NAMED]
        )
        if len(group) > NAMED:
            named += f", and {len(group) - NAMED} more"
        cells_text = plural(len(group), "cell")
        parts.append(f"{storage}: {cells_text} {_span(group)} ({named})")
    return "; ".join(parts)


def _one_side(what: str, unmatched: tuple[str, ...]) -> list[str]:
    """ "cells counted on one side only: A, B and more", or nothing."""
    if not unmatched:
        return []
    more = " and more" if len(unmatched) > NAMED else ""
    return [f"{what} counted on one side only: {', '.join(unmatched[:NAMED])}{more}"]


# -- the verdict ---------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Verdict(Derived):
    old: Release
    new: Release
    fail_above: float
    same_machine: bool
    consistency: Consistency
    counts: CountComparison | None = None
    micro_counts: CountComparison | None = None
    wall: RunComparison | None = None
    curve: ScaleComparison | None = None
    million: tuple[PerObject, ...] = ()
    #: The wall time measured together with the last release (pairs.py).
    paired: tuple[Judged, ...] = ()
    #: part -> why it was not compared
    not_compared: dict[str, str] = dataclasses.field(default_factory=dict)

    def counted(self, marked: bool = False) -> list[CountDifference]:
        """Every count cell the gate reads (receives depend on timing: shown
        in the detail, never gated), the micro-benchmarks' columns marked
        as the verdict names them with *marked*."""
        out = []
        for comp in (self.counts, self.micro_counts):
            for c in [] if comp is None else comp.cells:
                if marked and comp is self.micro_counts:
                    c = dataclasses.replace(c, column=c.column + MICRO)
                out += [] if c.timing else [c]
        return out

    def count_regressions(self, marked: bool = False) -> list[CountDifference]:
        return [c for c in self.counted(marked) if c.above(self.fail_above)]

    def count_improvements(self, marked: bool = False) -> list[CountDifference]:
        return [
            c
            for c in self.counted(marked)
            if c.differs and c.change is not None and -c.change > self.fail_above
        ]

    @property
    def regression(self) -> bool:
        return bool(self.count_regressions() or self.consistency.newly_wrong())

    @property
    def causes(self) -> list[str]:
        """What differs between the two releases' environments (package
        versions, implementations, commit, patched tree, Python): the
        summaries' metadata, then what the count files add (the counted
        children's implementations)."""
        out = differences(self.old.metadata, self.new.metadata)
        counted = [] if self.counts is None else self.counts.causes
        return out + [c for c in counted if c not in out]

    def unchecked(self) -> list[str]:
        """What the gate needed and could not read: no counts of the 2000
        rows on either side, a counted part or storage one side has and the
        other lacks, a shared storage whose consistency this release could
        not fully check.  Empty when the gate saw everything."""
        out = []
        if self.counts is None:
            out.append(self.not_compared.get("counts", "the counts were not compared"))
        else:
            out += _one_side("cells", self.counts.unmatched)
            out += self.counts.not_compared
        if self.micro_counts is not None:
            out += _one_side("micro-benchmarks", self.micro_counts.unmatched)
        if self.counts is not None:
            micro = (self.old.micro_counts is None, self.new.micro_counts is None)
            if micro[0] != micro[1] or (self.micro_counts is None and not any(micro)):
                out.append(
                    self.not_compared.get("counts", "micro-benchmark counts missing")
                )
        for storage, (state, why) in self.consistency.new.items():
            if state == "not fully checked":
                out.append(f"{storage}'s consistency not fully checked ({why})")
        for storage in self.consistency.old.keys() - self.consistency.new.keys():
            out.append(f"{storage}'s consistency not checked in {self.new.path}")
        return out

    @property
    def exit_status(self) -> int:
        if self.regression:
            return EXIT_VIOLATIONS
        return EXIT_INVARIANTS if self.unchecked() else EXIT_OK

    def headline(self) -> str:
        if self.regression:
            word = "REGRESSION"
        elif self.unchecked():
            word = "NOT FULLY CHECKED"
        else:
            word = "NO REGRESSION"
        ours = self.new.version()
        also = ""
        if ours and ours != self.old.version():
            also = f"; this release: ZODB {ours}"
        return f"Verdict against {self.old.label}: {word}{also}"

    def gate(self) -> str:
        """What the gate is, in one sentence."""
        return (
            f"a count cell grown above {self.fail_above:.0%} (and above "
            f"{LAYOUT_FLOOR:.0%}, what the process's layout alone moves), or a "
            "storage newly WRONG; NOT FULLY CHECKED when it could not read both"
        )

    def _count_lines(self) -> list[Line]:
        if self.counts is None and self.micro_counts is None:
            why = self.not_compared.get("counts", "not compared")
            return [Line("counts", f"NOT CHECKED: {why}: no gate on counts", GATE)]
        cells = self.counted(marked=True)
        grew, fell = self.count_regressions(True), self.count_improvements(True)
        moved = {storage_of(c) for c in grew + fell}
        still = sorted({storage_of(c) for c in cells} - moved)
        out = []
        if grew:
            out.append(
                Line(
                    "counts",
                    f"{len(grew)} of {len(cells)} cells grew above "
                    f"{self.fail_above:.0%}: {by_storage(grew)}",
                    GATE,
                )
            )
        if fell:
            out.append(
                Line(
                    "counts",
                    f"{len(fell)} of {len(cells)} cells fell by more than "
                    f"{self.fail_above:.0%} (improvements): {by_storage(fell)}",
                    CHANGE,
                )
            )
        covered = []
        if self.counts is not None:
            covered.append("the 2000 rows")
        if self.micro_counts is not None:
            covered.append("the micro-benchmarks")
        quiet = len(cells) - len(grew) - len(fell)
        text = (
            f"{quiet} of {len(cells)} cells no change ({' and '.join(covered)}; "
            f"within ±{LAYOUT_FLOOR:.0%}, what the process's layout alone moves, "
            "or their own spread)"
        )
        if moved and still:
            text += f"; no change at all: {', '.join(still)}"
        text += "".join(f"; {w}" for w in self.not_compared_of("counts"))
        out.append(Line("counts", text))
        return out

    def timing_not_comparable(self) -> str | None:
        """Why the timed parts say nothing of the code, or None."""
        return timing_not_comparable(self.old, self.new)

    def not_compared_of(self, part: str) -> list[str]:
        why = self.not_compared.get(part)
        return [why] if why else []

    def _wall_line(self) -> Line:
        if self.paired:
            assert self.new.paired is not None
            line = pairs.wall_line(self.paired, self.old, self.new.paired.mode)
            apart = self.timing_not_comparable()
            return dataclasses.replace(
                line,
                text=f"{line.text}; measured apart, {apart}" if apart else line.text,
            )
        line = self._unpaired_line()
        note = pairs.unpaired_note(self.new)
        return dataclasses.replace(line, text=f"{line.text}; {note}") if note else line

    def _unpaired_line(self) -> Line:
        if self.wall is None:
            return Line("wall time", self.not_compared.get("wall", "not compared"))
        w = self.wall
        slower, faster, unsure, quiet = w.tally(w.cells)
        line = tally(
            f"{len(w.cells)} cells",
            [(c.cell_name, c.line) for c in slower],
            [(c.cell_name, c.line) for c in faster],
            quiet,
            f"{len(unsure)} {unsure[0].verdict}" if unsure else "",
        )
        # The speed warning only: the page and the text say the load.
        speed = "".join(f"; {x}" for x in w.warnings if "different speeds" in x)
        return dataclasses.replace(line, text=line.text + speed)

    def _curve_line(self) -> Line:
        if self.curve is None:
            return Line("concurrency", self.not_compared.get("curve", "not compared"))
        c = self.curve
        worse = c.worse()
        return Line(
            "concurrency", c.summary(), CHANGE if worse or c.better() else QUIET
        )

    def _million_line(self) -> Line:
        if not self.million:
            return Line("million", self.not_compared.get("million", "not compared"))
        why = self.timing_not_comparable()
        text = "; ".join(m.line(why is None) for m in self.million)
        text += " (one trial a side: ratios, not tested)"
        if why is not None:
            text += f"; times {SEE_WALL}"
        return Line("million", text)

    def lines(self) -> list[Line]:
        """Every part's lines, the part whose gate failed first, then those
        with changes; a part's lines stay together."""
        out = [
            *self.consistency.lines(),
            *self._count_lines(),
            self._wall_line(),
            self._curve_line(),
            self._million_line(),
        ]
        if not self.same_machine:
            out.append(
                Line(
                    "machines",
                    f"the last release ran on {machine_words(self.old.metadata)}, "
                    f"this one on {machine_words(self.new.metadata)}: counts "
                    "compared, wall figures not comparable",
                    CHANGE,
                )
            )
        worst: dict[str, int] = {}
        for line in out:
            worst[line.part] = max(worst.get(line.part, 0), line.severity)
        order = {part: i for i, part in enumerate(worst)}
        out = sorted(out, key=lambda x: (-worst[x.part], order[x.part]))
        # What differs between the environments first: the likeliest cause
        # of every change below it.
        causes = self.causes
        if causes:
            out.insert(0, Line("environments differ", "; ".join(causes), CHANGE))
        return out

    def text(self) -> str:
        """The headline, then a line per part's finding, each wrapped at
        WIDTH columns under a hanging indent (a CI log has no terminal to
        wrap it)."""
        # The headline whole, on one line: what a CI log is searched for.
        out = [self.headline()]
        for line in [*self.lines(), Line("gate", self.gate())]:
            out += textwrap.wrap(
                str(line),
                WIDTH,
                initial_indent="  ",
                subsequent_indent="      ",
                break_on_hyphens=False,
            )
        return "\n".join(out) + "\n"

    def markdown(self) -> str:
        lines = [f"# {self.headline()}", ""]
        lines += [f"- **{x.part}**: {x.text}" for x in self.lines()]
        details = self.details()
        if details:
            lines += ["", "```", details.rstrip("\n"), "```"]
        return "\n".join(lines) + "\n"

    def details(self) -> str:
        """The compared cells, part by part (after the verdict)."""
        parts = []
        for comp in (self.counts, self.micro_counts):
            if comp is not None:
                parts.append(comp.text().rstrip("\n"))
        if self.paired:
            parts.append(pairs.details(self.paired))
        elif self.wall is not None:
            parts.append(self.wall.text(changed=True).rstrip("\n"))
        if self.curve is not None:
            parts.append(self.curve.text().rstrip("\n"))
        return "\n\n".join(parts) + "\n" if parts else ""

    #: Its JSON (codec.derived): the fields but the two releases, the
    #: last one's path, then what the verdict found.
    JSON_SKIP: ClassVar[tuple[str, ...]] = ("old", "new")
    JSON_AS: ClassVar[dict[str, Any]] = {"paired": pairs.judged_json}
    JSON_EXTRA: ClassVar[tuple[str, ...]] = (
        "against",
        "regression",
        "unchecked",
        "exit_status",
        "causes",
        "headline",
        "gate",
        "lines",
        "count_regressions",
        "count_improvements",
    )

    @property
    def against(self) -> str:
        return str(self.old.path)


def compare(
    old: Release, new: Release, fail_above: float = DEFAULT_FAIL_ABOVE
) -> Verdict:
    """*new* against *old* (both loaded and checked to be comparable)."""
    same = machine(old.metadata) == machine(new.metadata)
    old_name, new_name = str(old.path), str(new.path)
    not_compared: dict[str, str] = {}
    counts = micro = None
    if old.counts is None or new.counts is None:
        missing = old_name if old.counts is None else new_name
        not_compared["counts"] = f"no counts of the 2000 rows in {missing}"
    else:
        counts = compare_counts(
            old.counts, new.counts, old_name, new_name, exact_threshold=fail_above
        )
    if old.micro_counts is not None and new.micro_counts is not None:
        try:
            micro = compare_benchmarks(
                old.micro_counts, new.micro_counts, old_name, new_name, fail_above
            )
        except ResultsError as e:
            not_compared["counts"] = str(e)
    elif counts is not None:
        missing = old_name if old.micro_counts is None else new_name
        not_compared["counts"] = f"no micro-benchmark counts in {missing}"
    wall = curve = None
    why = timing_not_comparable(old, new)
    if why is not None:
        # Not compared at all: no view can call a change significant that
        # the verdict calls not comparable.
        not_compared.update(wall=why, curve=SEE_WALL if same else why)
    else:
        if old.table is not None and new.table is not None:
            wall = compare_files(old.table, new.table, old_name, new_name)
        else:
            not_compared["wall"] = "not compared: the 2000 table did not run in both"
        if old.scale is not None and new.scale is not None:
            try:
                curve = compare_scale(old.scale, new.scale, old_name, new_name)
            except ResultsError as e:
                not_compared["curve"] = f"not compared: {e}"
        else:
            not_compared["curve"] = "not compared: the curve did not run in both"
    judged = pairs.judged_with(old, new)
    million = tuple(per_object(old, new))
    if not million:
        not_compared["million"] = "not compared: the million run did not run in both"
    return Verdict(
        old,
        new,
        fail_above,
        same,
        Consistency(states(old.scale), states(new.scale)),
        counts,
        micro,
        wall,
        curve,
        million,
        judged,
        not_compared,
    )
