"""pytest-benchmark tests: every phase of the table and zodbshootout's
micro-benchmarks, on each storage chosen with --storage (docs/benchmarks.md)."""
