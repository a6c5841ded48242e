"""`vfab-bench release`: what a maintainer looks at before a release, in
one command, one JSON directory and one HTML page.

Four parts on the storages named: the 2000 table (scenarios.bench), the
micro-benchmarks (the pytest-benchmark suite under tests/benchmarks, run
with --benchmark-json into the directory), a concurrency curve with the
consistency check (scale at a few client counts, on the storages several
processes can share) and a run at the data set size nearest a million
objects.  Each part is shortened so that the whole fits in about five
minutes on a two-core machine; the plan says which and how (plan.py), the
parts run one after the other (parts.py), and index.html presents them
with the commands' own renderers (page.py).
"""
