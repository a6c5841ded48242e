"""Concurrent load: simulated users doing virtual-fab work on a ZEO server.

mix.py: the operations, their weights and LoadConfig; options.py: the load
options, declared once for zeoloop and locust; session.py: one user's
Session with conflict retries, recording every attempt; history.py: the
attempts and their outcomes, carried between processes; consistency.py:
the check of the data against the baseline and the history; status.py: a
server's counters; zeoloop.py: the load without locust; locust_plugin.py:
the locust glue (the only module importing locust).
"""
