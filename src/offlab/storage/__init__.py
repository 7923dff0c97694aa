"""Storing results: where a store is (location), its tables (tables), its schema's
history and upgrades (schema, alembic/), reading runs back (reading), and which process
writes a run (writer). The store's API is offlab.store.Store."""
