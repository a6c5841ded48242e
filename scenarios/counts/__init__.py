"""Counting work instead of timing it: instructions (callgrind) and I/O
system calls (strace) per phase; see docs/counts.md."""
