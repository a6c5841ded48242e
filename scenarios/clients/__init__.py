"""What drives clients: one package owns the client process, for every
command that runs clients against a shared database (scale, matrix,
verify, zeoloop, the locustfile).

fleet.py: a point's client processes, wherever they run (LocalFleet:
this machine's); process.py: one client process, its clients as its kind says (scale's,
a worker's); loop.py: the client loop every load shares (zeoloop's, scale's, locust's
an operation at a time); concurrency.py: the kinds (processes, threads,
greenlets) and the drivers greenlets cannot use; histogram.py:
HdrHistogram latencies, merged across processes; processes.py: client
processes that Ctrl-C does not reach, their parent stops them;
zeoloop.py: the load without locust, threads in processes (`vfab-bench
zeoloop`); cpu.py: a server's CPU from /proc, a host's busy CPU (what a
fleet's hosts measure); memory.py: the memory client processes need,
checked before any starts.
"""
