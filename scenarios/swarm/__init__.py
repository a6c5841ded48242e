"""The locust glue: the only package importing locust.

plugin.py: the locustfile's options, one ZODB.DB per locust process, the
history gathered and checked on the master; worker_clock.py: a locust
worker's clock measured against its master's; stats.py: locust's outputs
(--json-file beside --csv, the summary).

Named for locust's own word for its users (it "swarms" them), and not
``locust``: a package of that name would read as the locust distribution
in imports, tracebacks and tools that resolve names by their last part.
"""
