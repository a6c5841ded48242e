"""The benchmark run: configuration, phases, the runner and what it measures
besides time (batching, peak RSS).
"""
