"""RelStorage and the database servers behind it.

Each backend is one module defining the same kinds of names: its two
factories (FACTORIES: history-free, history-preserving) and what they
need to reach their data.

- sqlite: RelStorageSQLite*Factory and the read-only check of its files.
- postgresql: RelStoragePG*Factory, PGOptions, PostgreSQLServer (the server the suite
  starts) and PostgreSQLDatabases (per-trial databases, also on a user's
  DSN); available() says whether a server can start here.
- mysql: RelStorageMySQL*Factory, MySQLOptions, MariaDBServer, MySQLDatabases (also on a
  user's mysql:// URL), available().

What the backends share: factory (the factories' base classes, the store
and the shared database), servers (ServerProcess on storages.process's
life cycle, TrialDatabases), adapters (open_relstorage() with the MariaDB
workarounds), drivers, uri (their URIs: what share() yields), dsn
(libpq DSNs), options (their shared parts), backends (the six in registry
order).

Nothing here imports RelStorage or a database driver at import time.
"""
