"""What crosses the pipe to a worker's cell sources, below cells.py and
clientcells.py (both read it): a cell's key, and the storage options."""

from __future__ import annotations

import base64
import pickle
from collections.abc import Mapping
from typing import Any

#: (column, row): one cell of a trial.
Cell = tuple[str, str]


def encoded_options(options: Any) -> str:
    """StorageOptions as they cross the pipe (both ends run this checkout's
    code, so its pickle is theirs)."""
    return base64.b64encode(pickle.dumps(options)).decode("ascii")


def decoded_options(params: Mapping[str, Any]) -> Any:
    """The StorageOptions *params* carry (default ones when none)."""
    import storages

    text = params.get("options")
    return pickle.loads(base64.b64decode(text)) if text else storages.StorageOptions()
