"""Commits in batches: a bounded number of new objects per transaction.

A data set of a million objects built in one transaction holds every object
in memory until the commit, and pickles them all in one go.  A Batcher is
the generator's checkpoint (vfab.generate): it counts the objects attached so
far and, once a batch is full, commits and trims the connection cache, so
that memory stays bounded whatever the data set's size.  With batch 0 it
only counts (one transaction per phase, as the 2000 suite did).
"""

from __future__ import annotations

import time

from storages import Store

#: Objects per transaction for sizes of XLARGE_SCALE and up when --batch is
#: not given: about 100 transactions for the million objects of xlarge.
DEFAULT_XLARGE_BATCH = 10_000


class Batcher:
    """Counts objects; commits every *batch* of them (0: never).

    objects: objects counted so far; commits: batch commits made;
    commit_s: wall seconds spent in them (commit and cache trim).
    """

    def __init__(self, store: Store, batch: int = 0) -> None:
        if batch < 0:
            raise ValueError(f"batch must be 0 or more, not {batch}")
        self.store = store
        self.batch = batch
        self.objects = 0
        self.commits = 0
        self.commit_s = 0.0
        self._pending = 0

    def __call__(self, objects: int) -> None:
        self.objects += objects
        if not self.batch:
            return
        self._pending += objects
        if self._pending >= self.batch:
            self._pending = 0
            t0 = time.perf_counter()
            self.store.commit()
            # Ghosts left by the commit are dropped once nothing refers to
            # them; the cache's target size bounds the rest.
            self.store.trim_cache()
            self.commit_s += time.perf_counter() - t0
            self.commits += 1
