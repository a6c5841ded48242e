"""vfab-bench matrix: zodbshootout's benchmarks by concurrency, concurrency
kind and objects per transaction, on any storage, and RelStorage's SQLite
FAQ's claims answered from the run (docs/matrix.md)."""
