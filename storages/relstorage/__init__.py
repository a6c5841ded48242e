"""RelStorage and the database servers behind it.

- servers: what the PostgreSQL and MariaDB servers the suite starts share
  (ServerProcess) and per-trial databases (TrialDatabases).
- postgresql: PostgreSQLServer, PostgreSQLDatabases (also a user's DSN).
- mysql: MariaDBServer, MySQLDatabases (also a user's mysql:// URL).
- adapters: open_relstorage() for sqlite3, postgresql and mysql, with the
  MariaDB workarounds.

Nothing here imports RelStorage or a database driver at import time.
"""
