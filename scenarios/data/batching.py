"""Commits in batches: a Batcher commits and trims the cache once a batch of
new objects is full, so that building a million objects keeps memory
bounded; with batch 0 it only counts (one transaction per phase).
"""

from __future__ import annotations

import time

from storages import Store

#: Objects per transaction from xlarge's scale up when --batch is not given.
#: Every batch commit writes again the index buckets the batch touched, so
#: larger batches write less (measured at xlarge: 10,000 objects per batch
#: stored 1.04 million objects in "convert processes", 100,000 stored 0.62
#: million, for 450,000 built).
DEFAULT_XLARGE_BATCH = 100_000

#: Connection cache target, in objects, from xlarge's scale up when
#: --cache-size is not given.  Building sequences picks capabilities at random
#: among 425,000; with ZODB's default of 400 objects every batch commit trims
#: the cache and almost every step loads its capability again (measured: 1.5
#: million loads, 10x the cost per object of small).  A million objects keeps
#: that working set in memory at a peak RSS of about 1.1 GB.
DEFAULT_XLARGE_CACHE_SIZE = 1_000_000


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
