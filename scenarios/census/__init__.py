"""Census: what a ZODB database holds, by class, read without writing and
without importing a class (pickles.py, walk.py, model.py, sources.py,
report.py).
"""
