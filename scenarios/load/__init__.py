"""Concurrent load: simulated users doing virtual-fab work on a shared
database, and the consistency check of what they did.

mix.py: the operations, their weights and LoadConfig; options.py: the load
options, declared once for zeoloop and locust; session.py: one user's
Session with retries, recording every attempt; history.py: the attempts,
their outcomes and each client's session record, carried between
processes (docs/history-format.md); clock.py and promises.py: the clients'
shared clock and what each storage promises; consistency.py: the check
(readback.py reads the data back, judge.py judges: index.py, checker.py's
rules, cycles.py and graph.py's dependency graph, anomalies.py's levels;
violations.py: the report); status.py: a server's counters; zeoloop.py:
the load without locust; locust_plugin.py: the locust glue (the only
module importing locust).
"""
