"""`vfab-bench release`: what a maintainer looks at before a release, in one
command, one directory and one page: the 2000 table, the micro-benchmarks,
the counts, a concurrency curve with the consistency check and a million
objects, shortened to fit five minutes (plan.py, parts.py, page.py).
"""
