"""The commit-cost sweep: cost per object against objects per transaction,
for several container shapes.

The pickler-memo trap: ZODB's ObjectWriter pickles every object of a commit with
one pickler and clears its memo after each object, and CPython's clear_memo
costs time proportional to the largest memo the pickler ever held.  One
object whose pickle holds N references (a flat PersistentList of N
persistent objects) grows that memo to N entries, so every object pickled
after it in the same commit pays O(N): cost per object grows with the
transaction.  A BTree holds the same objects in buckets of a few dozen
references each, so its cost per object stays flat.  The sweep shows both.

config.py: the variants and SweepConfig; runner.py: trials and the sweep;
results.py: samples, points and the JSON; report.py: tables and the plot.
"""
