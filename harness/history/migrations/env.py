"""Alembic's environment for the results store (harness/history/migrate.py runs it).

The connection comes from migrate.py (config.attributes["connection"]), already inside the
transaction that holds the store's migration lock, so a migration and the version check before it
are one unit: two shard jobs that open a new store at once create it once.
"""
from alembic import context

from harness.history.schema import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata,
                  render_as_batch=connection.dialect.name == "sqlite")   # SQLite alters tables by copying them
with context.begin_transaction():
    context.run_migrations()
