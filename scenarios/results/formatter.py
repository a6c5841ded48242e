"""Every number a view prints, formatted in one place (pyperf's _formatter.py):
times, sizes and rates, so that the terminal, Markdown, the HTML page and
compare write one value the same way and name a unit the same way ("µs",
never "us")."""

from __future__ import annotations

#: Units of time, largest first.
TIME_UNITS = (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9))


def seconds(value: float) -> str:
    """Seconds with the precision that suits them, for tables in seconds:
    "123", "12.3", "1.23", "0.0123"."""
    if value >= 100:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.1f}"
    if value >= 1:
        return f"{value:.2f}"
    return f"{value:.4f}"


def duration(value: float) -> str:
    """Seconds in the unit that suits them, three significant digits:
    "231 µs", "11.8 ms", "1.20 s"; "0 s" for zero."""
    if value == 0:
        return "0 s"
    unit, scale = next(
        ((u, s) for u, s in TIME_UNITS if abs(value) >= s), TIME_UNITS[-1]
    )
    v = value / scale
    return f"{v:.0f} {unit}" if abs(v) >= 100 else f"{v:#.3g} {unit}"


def plural(n: int, word: str, words: str | None = None) -> str:
    """ "1 trial", "5 trials", "1,200 clients": never "trial(s)"."""
    return f"{n:,} {word if n == 1 else (words or word + 's')}"


def ratio(value: float | None) -> str:
    """A ratio new / old as compare lines show it: "1.05x", "-" for none."""
    return "-" if value is None else f"{value:.2f}x"


def change(value: float | None) -> str:
    """A relative change as compare lines show it: "+5.1%", "-0.3%"."""
    if value is None:
        return "-"
    return f"{value * 100:+.1f}%" if abs(value) < 0.1 else f"{value * 100:+.0f}%"


def axis_seconds(value: float) -> str:
    """A round axis tick: 1e-3 -> "1 ms", 2e-5 -> "20 µs", 5 -> "5 s"."""
    for unit, scale in TIME_UNITS:
        if value >= scale * 0.999:
            return f"{value / scale:g} {unit}"
    return f"{value:g} s"


def ms(value_ms: float) -> str:
    """Milliseconds for latency tables: "12.3", "1.23"."""
    return f"{value_ms:.1f}" if value_ms >= 10 else f"{value_ms:.2f}"


def size(n: int | None) -> str:
    """Bytes as B, KB, MB or GB (powers of 1024), signed when negative;
    "-" for None."""
    if n is None:
        return "-"
    sign, n = ("-" if n < 0 else ""), abs(n)
    for unit, scale in (("GB", 2**30), ("MB", 2**20), ("KB", 2**10)):
        if n >= scale:
            return f"{sign}{n / scale:.1f} {unit}"
    return f"{sign}{n} B"
