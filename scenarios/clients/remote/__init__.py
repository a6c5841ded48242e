"""Clients on other hosts, over locust: the only package importing locust
(and the locustfile, which locust imports by path).

plugin.py: the locustfile's options, one ZODB.DB per locust process, the
history gathered and checked on the master; requests.py: its users'
operations as locust requests; senders.py: a worker's history records
bound to it; forked.py: the workers --processes forks; guard.py: its --master and
--worker hearing only this run's peers, through trust.py (the guarded
runners, `vfab-bench scale --workers` uses them too), seal.py (the run's
token, the seal on every frame) and shapes.py (what a message may hold);
worker_clock.py: a locust worker's clock measured against its master's;
stats.py: locust's outputs (--json-file beside --csv, the summary);
wire.py: what scale's master and workers say to each other, and the
locust user that holds a client's place; worker.py: `vfab-bench worker`,
locust's worker running a point's client processes; cluster.py: the
master's side, locust's MasterRunner and a point's ClusterFleet.

Not named ``locust``: a package of that name would read as the locust
distribution in imports, tracebacks and tools that resolve names by their
last part.
"""
