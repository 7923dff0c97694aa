"""The store wing: the one place results are kept. `store.Store` is the API a run writes
samples through and reports read runs from; where a store is (location, masking), its
tables (tables) and their one Alembic history for SQLite and PostgreSQL (schema,
alembic/), upgrades of the hand-written releases (migrations), reading runs back
(reading, results), which process writes a run (writer), and runs leaving a store
(export, runcopy, codec).

May import: measure (a sample's headline), analysis (summaries and adaptive outcomes
stored beside the samples), and the ground floor (records, proc). Never report, studies,
run or the command line: they read the store, not the other way round."""
