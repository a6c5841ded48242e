"""The data set, below every command: how it is built (dataset, in batches:
batching), how big it gets (estimate), and data sets kept in directories
(datadir: populate writes them, serve and census read them).
"""

#: The root key under which a data set's VirtualFab lives.
FAB_KEY = "fab"
