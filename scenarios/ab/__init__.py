"""vfab-bench ab: two environments measured together, judged by their
paired ratios (docs/ab.md).  envs.py builds and caches the environments
(uv), worker.py is the measuring process each side runs, sides.py the
parent's handle on it, cells.py the cell sources (what a trial measures),
clientcells.py the matrix's cells and a scale point, params.py what
crosses the pipe to them, runner.py the rounds (interleaved or duet),
judge.py the paired verdict, model.py the result and its JSON, report.py
the text, page.py the page (--html); defaults.py what the command line
states without importing the rest.
"""
