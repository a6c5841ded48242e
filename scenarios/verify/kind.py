"""verify --json files as a result kind: written, read by no command (a
verify file's verdicts are its text; compare and report refuse it)."""

from __future__ import annotations

from scenarios.results import files
from scenarios.results.kinds import Kind

KIND = Kind(files.VERIFY, "verify file")
