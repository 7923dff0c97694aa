"""JSON columns as JSONB on PostgreSQL (results format 4 still).

The documents of a run (tool versions, settings, host facts, writer), of a case
(offload features, traffic, topology, parameters, datapath) and of a sample (CPU roles
and their hosts) were TEXT holding JSON; a database engineer queries and indexes them
as JSONB. JSONB keeps no key order: codec.py decodes by name and reads plain mappings
back in sorted order, so nothing depends on the order it returns keys in.

SQLite has no JSONB (its JSON stays text; SQLAlchemy's JSON type reads both as Python
objects): nothing changes there. The results format stays 4: the files and their text
are the same, and an offlab of revision 0003 finds 0004 unknown and refuses the store.

One ALTER TABLE per table (one rewrite each). An empty text, which the codec read as
"none", becomes NULL where the column may be NULL and ``{}`` where it may not.

Revision ID: 0004
"""

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

DOCUMENTS = {
    # table: (columns that must hold a document, columns that may be NULL)
    "run": (("tool_versions", "settings", "host_facts"), ("writer",)),
    "case": (("profile_features", "traffic", "topology", "params"), ("datapath",)),
    "sample": (("roles", "role_hosts"), ()),
}
_DEFAULTED = {("run", "settings"), ("run", "host_facts"), ("case", "topology"), ("case", "params"),
              ("sample", "role_hosts")}
"""The columns with a server default of '{}' (revisions 0001–0002), which is text and
must be dropped before the type changes and set again as JSONB."""


def _alter(table: str, required: tuple[str, ...], nullable: tuple[str, ...]) -> str:
    steps = [f"ALTER COLUMN {c} TYPE JSONB USING COALESCE(NULLIF({c}, ''), '{{}}')::jsonb" for c in required]
    steps += [f"ALTER COLUMN {c} TYPE JSONB USING NULLIF({c}, '')::jsonb" for c in nullable]
    return f'ALTER TABLE "{table}" ' + ", ".join(steps)


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for table, column in sorted(_DEFAULTED):
        op.execute(f'ALTER TABLE "{table}" ALTER COLUMN {column} DROP DEFAULT')
    for table, (required, nullable) in DOCUMENTS.items():
        op.execute(_alter(table, required, nullable))
    for table, column in sorted(_DEFAULTED):
        op.execute(f"""ALTER TABLE "{table}" ALTER COLUMN {column} SET DEFAULT '{{}}'::jsonb""")
