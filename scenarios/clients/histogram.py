"""Latency histograms: HdrHistogram in microseconds, one per operation and
client process, sent encoded and merged in the parent; percentiles come
from the merged histogram when a table asks.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

#: Lowest and highest trackable values (us) and significant digits.
LOWEST_US = 1
HIGHEST_US = 3_600_000_000
DIGITS = 3


def new() -> Any:
    from hdrh.histogram import HdrHistogram

    return HdrHistogram(LOWEST_US, HIGHEST_US, DIGITS)


def record_ms(histogram: Any, ms: float) -> None:
    """Record *ms* (clamped into the trackable range)."""
    us = min(max(int(round(ms * 1000)), LOWEST_US), HIGHEST_US)
    histogram.record_value(us)


def encode(histogram: Any) -> str:
    return histogram.encode().decode("ascii")  # type: ignore[no-any-return]


def merged(encoded: Iterable[str | None]) -> Any:
    """One histogram adding every encoded one (None and "" skipped)."""
    out = new()
    for text in encoded:
        if text:
            out.decode_and_add(text.encode("ascii"))
    return out


def summary_ms(histogram: Any) -> dict[str, float | int]:
    """count, and p50/p95/p99/max in ms (0 when empty)."""
    count = int(histogram.get_total_count())
    if not count:
        return {"count": 0, "p50": 0.0, "p95": 0.0, "p99": 0.0, "max": 0.0}
    return {
        "count": count,
        "p50": histogram.get_value_at_percentile(50) / 1000,
        "p95": histogram.get_value_at_percentile(95) / 1000,
        "p99": histogram.get_value_at_percentile(99) / 1000,
        "max": histogram.get_max_value() / 1000,
    }


def merged_windows(
    per_client: list[list[dict[str, Any]]],
) -> tuple[dict[str, Any], ...]:
    """The clients' sub-windows added window by window: ({"hist": encoded,
    "commits": n}, ...); () when the clients kept none."""
    n = max((len(w) for w in per_client), default=0)
    out = []
    for i in range(n):
        parts = [w[i] for w in per_client if i < len(w)]
        out.append(
            {
                "hist": encode(merged(p["hist"] for p in parts)),
                "commits": sum(int(p["commits"]) for p in parts),
            }
        )
    return tuple(out)
