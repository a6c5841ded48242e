"""Census: what a ZODB database holds, by class, read without writing and
without importing a class.

pickles.py reads class names and plain state from records; walk.py is the
census (the walk from the root and the history); model.py what it found and
its JSON; sources.py opens a path, a ZEO server or a URI read-only;
report.py prints it.
"""
