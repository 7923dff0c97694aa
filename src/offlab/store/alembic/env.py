"""Alembic's entry point for the store's migrations. offlab runs them itself (see
storage/schema.py) on a connection it has opened and locked, passed in
``config.attributes["connection"]``; there is no alembic.ini and no offline mode."""

from alembic import context

connection = context.config.attributes["connection"]
context.configure(connection=connection, transactional_ddl=True)
with context.begin_transaction():
    context.run_migrations()
