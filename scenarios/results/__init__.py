"""Results: the result model and its versioned JSON, statistics, run metadata
and the tables every command prints.
"""
