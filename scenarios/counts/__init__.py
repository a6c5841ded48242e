"""Counting work instead of timing it: instructions (callgrind) and I/O
system calls (strace) per phase; see docs/counts.md."""

#: Counted trials per storage unless --repeat or --preset says otherwise:
#: two, so that a cell that is not exact shows its spread.
COUNT_TRIALS = 2
