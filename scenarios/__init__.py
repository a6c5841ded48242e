"""Phases, runner, results and reports: where vfab meets the storages.

Data flows one way: CLI -> RunConfig (validated, frozen) -> runner -> for
each storage and trial a fresh database -> phases -> Samples -> RunResult ->
JSON, tables, plots.
"""
