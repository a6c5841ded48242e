"""A ZODB.DB holding the small vfab data set where a load's Session looks
for it: for tests of the load engine in one process."""

from __future__ import annotations

from typing import Any

import transaction
import ZODB
from persistent.mapping import PersistentMapping

from scenarios.data import FAB_KEY
from storages import ROOT_KEY
from vfab import generate
from vfab.generate import DataSpec


def fab_db(storage: Any, pool_size: int = 7) -> ZODB.DB:
    """*storage* in a ZODB.DB, the small data set committed in it."""
    db = ZODB.DB(storage, pool_size=pool_size)
    tm = transaction.TransactionManager()
    conn = db.open(tm)
    conn.root()[ROOT_KEY] = PersistentMapping()
    conn.root()[ROOT_KEY][FAB_KEY] = generate.build(DataSpec.for_size("small"))
    tm.commit()
    conn.close()
    return db
