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
