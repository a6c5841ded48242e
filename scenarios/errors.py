"""The suite's error for bad input, shared by every feature package."""

from __future__ import annotations


class ConfigError(ValueError):
    """Bad input for a command (a value, a file, a combination of options);
    the CLI prints it as one line and exits 2."""
