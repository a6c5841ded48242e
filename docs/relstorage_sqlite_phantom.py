"""RelStorage's SQLite adapter commits a transaction whose vote failed.

Run: python relstorage_sqlite_phantom.py [--fixed]  (ZODB and RelStorage only)
--fixed forces Sqlite3Driver.connection_may_need_rollback to answer True.
Exit status 1 when the failed transaction's write is there.
"""

import sqlite3
import sys
import tempfile
from importlib.metadata import version

import transaction
import ZODB
from persistent.mapping import PersistentMapping as PM
from relstorage.adapters.sqlite.adapter import Sqlite3Adapter
from relstorage.adapters.sqlite.drivers import Sqlite3Driver
from relstorage.options import Options
from relstorage.storage import RelStorage
from ZODB.POSException import ConflictError

if "--fixed" in sys.argv:
    Sqlite3Driver.connection_may_need_rollback = lambda self, conn: True
data_dir = tempfile.mkdtemp()
print("RelStorage", version("relstorage"), "ZODB", version("ZODB"), end=" ")
print("SQLite", sqlite3.sqlite_version, "Python", sys.version.split()[0])


def client():
    options = Options(keep_history=False, driver="sqlite3")
    storage = RelStorage(Sqlite3Adapter(data_dir, {}, options), options=options)
    tm = transaction.TransactionManager()
    return tm, ZODB.DB(storage).open(tm).root()


tm1, root1 = client()  # 1. client 1 commits a, b and log
root1["a"], root1["b"], root1["log"] = PM(v=0), PM(x="original"), PM(n=0)
tm1.commit()
tm2, root2 = client()  # 2. client 2 opens a connection
tm2.begin()
tm1.begin()  # 3. client 1 reads a with readCurrent and writes b
root1["a"]._p_jar.readCurrent(root1["a"])
root1["b"]["x"] = "failed"
root2["a"]["v"] = 1  # 4. client 2 changes a and commits
tm2.commit()
try:  # 5. client 1's commit fails; it aborts
    tm1.commit()
except ConflictError as e:
    print("client 1's commit raised", type(e).__name__)
    tm1.abort()
root1["log"]["n"] = 1  # 6. client 1 commits an unrelated change
tm1.commit()
tm3, root3 = client()  # 7. a third client reads b
print("b['x'] is", repr(root3["b"]["x"]), "(expected 'original')")
sys.exit(root3["b"]["x"] != "original")
