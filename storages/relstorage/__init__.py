"""RelStorage and the database servers behind it.

- servers: what the PostgreSQL and MariaDB servers the suite starts share
  (ServerProcess) and per-trial databases (TrialDatabases).
- postgresql: PostgreSQLServer, PostgreSQLDatabases (also a user's DSN).
- mysql: MariaDBServer, MySQLDatabases (also a user's mysql:// URL).
- sqlite: the relstorage-sqlite factories and their read-only check.
- adapters: open_relstorage() for sqlite3, postgresql and mysql, with the
  MariaDB workarounds; uri: their URIs (what share() yields).
- options: RelStorageOptions; factory: what the factories share, and the
  PostgreSQL and MariaDB ones; backends: the six, in registry order.

Nothing here imports RelStorage or a database driver at import time.
"""
