"""Changes to an existing data set, as an application makes them.

reprice() is the update phase's work: a deterministic tenth of the
capabilities get a new price through ProcessLibrary.reprice, so the price
indexes stay right and old revisions pile up for pack to remove.
"""

from __future__ import annotations

from vfab.generate import Checkpoint, no_checkpoint, rng_for
from vfab.model import VirtualFab

#: Share of the capabilities the update phase reprices.
REPRICE_SHARE = 0.10


def reprice(
    fab: VirtualFab,
    seed: int,
    share: float = REPRICE_SHARE,
    checkpoint: Checkpoint = no_checkpoint,
) -> list[int]:
    """Give *share* of the capabilities (chosen by *seed*, the same ones every
    time) a price 20% lower to 25% higher; return their ids, ascending."""
    rng = rng_for(seed, "reprice")
    library = fab.library.indexed()
    n = len(library)
    ids = sorted(rng.sample(range(1, n + 1), round(n * share)))
    capabilities = library.capabilities
    for cid in ids:
        capability = capabilities[cid]
        library.reprice(capability, capability.price * rng.uniform(0.8, 1.25))
        checkpoint(1)
    return ids
