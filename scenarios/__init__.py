"""Everything that drives and reports: where vfab meets the storages.  One
subpackage per command, results/ for what they share, cli/ on top
(docs/architecture.md: the layout, the floors, the glossary).
"""
