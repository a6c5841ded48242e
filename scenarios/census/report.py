"""The census as text: one row per class, most bytes first, then the
revisions' totals and the sizes."""

from __future__ import annotations

from scenarios.census.model import Census
from scenarios.results.table import Table, wrapped


def _n(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def text(census: Census) -> str:
    """The census as a table, one row per class, most bytes first."""
    total_bytes = census.pickle_bytes
    header = ["class", "objects", "bytes", "avg bytes", "% of bytes"]
    if census.revisions is not None:
        header += ["revisions", "old"]
    rows = []
    for c in census.classes:
        share = c.bytes / total_bytes if total_bytes else 0.0
        row = [c.name, _n(c.count), _n(c.bytes), f"{c.average:,.0f}", f"{share:.1%}"]
        if census.revisions is not None:
            row += [_n(c.revisions), _n(c.old_revisions)]
        rows.append(row)
    total = [
        "total",
        _n(census.objects),
        _n(total_bytes),
        f"{total_bytes / census.objects:,.0f}" if census.objects else "0",
        "100.0%" if total_bytes else "-",
    ]
    if census.revisions is not None:
        total += [_n(census.revisions.records), _n(census.revisions.old)]
    lines = [
        f"census of {census.source} ({census.storage})",
        f"at transaction {census.tid or '(none: empty database)'}"
        + (f", {census.tid_time}" if census.tid_time else ""),
        "",
    ]
    lines += Table("", header, [*rows, total], total=True).lines()
    lines.append("")
    if census.revisions is not None:
        h = census.revisions
        lines.append(
            f"revisions: {h.transactions:,} transactions, {h.records:,} records: "
            f"{h.current:,} current, {h.old:,} old; {h.unreachable:,} current "
            "objects not reachable from the root"
        )
    else:
        lines.append("revisions: not read (no storage iterator, or --no-revisions)")
    if census.missing:
        lines.append(f"missing: {census.missing:,} references to absent objects")
    size = f"size: {_n(census.size_bytes)} bytes (storage.getSize())"
    if census.directory_bytes is not None:
        size += f", {census.directory_bytes:,} bytes in its directory"
    lines.append(size)
    if census.storage_len is not None:
        lines.append(f"len(storage): {census.storage_len:,} current objects")
    if census.vfab is not None:
        spec = ", ".join(f"{k} {v}" for k, v in sorted(census.vfab.items()))
        lines.append(f"vfab data set: {spec or 'no spec recorded'}")
    lines.append(f"took {census.seconds:.2f} s")
    # The table's lines fit already; a long path or sentence wraps.
    return "\n".join(map(wrapped, lines)) + "\n"
