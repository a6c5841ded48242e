"""Concurrent load: simulated users doing virtual-fab work on a shared
database, every attempt recorded.

mix.py: the operations, their weights and LoadConfig; options.py: the load
options, declared once for zeoloop, locust and scale; target.py: --target;
session.py: one user's Session with retries, recording every attempt;
history.py: the attempts, their outcomes and each client's session record,
carried between processes (docs/history-format.md); clock.py and
promises.py: the clients' shared clock and what each storage promises;
zeo_status.py: a ZEO server's counters.

What judges the history is scenarios.checker; what drives clients
(locust's among them), scenarios.clients.  Neither is imported here: the
load engine stands below both.
"""
