"""numpy for the statistics (significance, permutation), imported the first
time one needs it, with one BLAS thread, and only where a memory limit
leaves it room: OpenBLAS, short of memory while numpy imports, prints
"Memory allocation still failed" and exits 1, which no handler sees.
"""

from __future__ import annotations

import errno
import mmap
import os
import resource
import sys
from types import ModuleType

#: The address space `import numpy` maps with one BLAS thread: 85 MB
#: measured (VmSize before and after, Python 3.11, numpy 2 with OpenBLAS),
#: and some to spare.  Two BLAS threads map 126 MB.
NUMPY_ADDRESS_SPACE = 96 * 2**20


def numpy() -> ModuleType:
    """The numpy module; MemoryError, before importing it, when the
    process's memory limit (ulimit -v) leaves it no room."""
    if "numpy" not in sys.modules:
        # The statistics are small arrays: a BLAS thread per core would only
        # compete with what is measured.  A user's own setting stands.
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
        _room_for_numpy()
    import numpy as module

    return module


def _room_for_numpy() -> None:
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return
    try:
        probe = mmap.mmap(-1, NUMPY_ADDRESS_SPACE)
    except OSError as e:
        if e.errno != errno.ENOMEM:
            raise
        raise MemoryError("no room under the memory limit to import numpy") from None
    probe.close()
