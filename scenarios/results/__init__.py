"""Results: the model (model.py) and what every command shares to keep and
show it: files and formats, schema, stats, significance, power, table,
formatter, svg, htmlbase, environment, metadata, kinds.
"""
