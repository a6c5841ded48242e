"""The consistency check of a concurrent run: a pure function of the
attempt history (scenarios.load.history), the baseline and the data read
back, to a report of violations and the isolation level the history shows.

judge.py: the entry, judge(); index.py: the history indexed; rules.py:
Rules, the checks beside the graph; structure.py: the data's structure;
cycles.py, shapes.py and graph.py: the dependency graph and its cycles,
every class searched on its own; anomalies.py: the anomaly classes and
the lattice of levels they rule out; violations.py: the kinds
and the report; check.py: Check, the result the commands keep;
known_bugs.py: upstream bugs known to make a storage wrong; readback.py:
the data read back through a client; consistency.py: the check as the
commands run it (baseline, read back, judge).
"""
