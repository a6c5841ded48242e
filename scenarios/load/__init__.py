"""Concurrent load: simulated users doing virtual-fab work on a ZEO server.

mix.py: the operations, their weights and LoadConfig; options.py: the load
options, declared once for zeoloop and locust; session.py: one user's
Session with conflict retries; journal.py: what users committed and the
check; status.py: a server's counters; zeoloop.py: the baseline without
locust; locust_plugin.py: the locust glue (the only module importing locust).
"""
