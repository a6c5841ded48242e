"""What drives clients: one package owns the client process, for every
command that runs clients against a shared database (scale, matrix,
verify, zeoloop, the locustfile).

concurrency.py: the kinds (processes, threads, greenlets) and the drivers
greenlets cannot use; histogram.py: HdrHistogram latencies, merged
across processes; zeoloop.py: the load without locust, threads in
processes (`vfab-bench zeoloop`); processes.py: client processes that
Ctrl-C does not reach, their parent stops them.
"""
