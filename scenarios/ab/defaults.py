"""ab's defaults, apart from the runner so that the command line's parser
states them without importing the runner (every command's start-up pays
for what the parser imports)."""

from __future__ import annotations

#: interleaved (RMIT) or duet.
MODES = ("interleaved", "duet")
#: Pairs per cell and warmup pairs before them, by default and --quick.
DEFAULT_PAIRS, DEFAULT_WARMUPS = 10, 1
QUICK_PAIRS = 6
DEFAULT_STORAGES = ("file", "zeo")
DEFAULT_CELLS = ("rows", "micro")
#: The matrix's cells ab measures (a trial is a whole matrix run: fewer
#: groups than the matrix's default), the matrix's quick benchmarks.
MATRIX_CONCURRENCY = (1, 5)
MATRIX_OBJECTS = (1, 100)
MATRIX_QUICK_CONCURRENCY = (1,)
MATRIX_QUICK_OBJECTS = (100,)
#: The scale point: clients, then its warmup and measured window (seconds).
SCALE_CLIENTS = 4
SCALE_WARMUP_S, SCALE_DURATION_S = 1.0, 4.0
