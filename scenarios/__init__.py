"""Everything that drives and reports: where vfab meets the storages.

One subpackage per feature: bench (the run), results (files, statistics,
tables), sweep, census, load, data, and cli (one module per subcommand).
Data flows one way: CLI -> a frozen configuration -> runner -> for each
storage and trial a fresh database -> phases -> samples -> results -> JSON,
tables, plots.  docs/architecture.md has the layout and the glossary.
"""
