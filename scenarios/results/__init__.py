"""Results: what every command measured and how it is kept and shown.

files.py is the versioned JSON (one reader, every format's history); model.py
the run's result dataclasses; stats.py the statistics of raw values;
table.py the one table renderer (text and Markdown); report.py the run's
tables; metadata.py what every result records about the machine and versions.
"""
