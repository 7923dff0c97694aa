"""The team store: many writers, runs copied between engines, campaigns (results format 3).

* ``run.writer``: which offlab process writes a run (storage/writer.py), so that a run
  starting on one machine marks only its own machine's killed runs as interrupted,
  never a run another machine is writing into the same database.
* ``seq`` on ``sample_cpu``, ``sample_offload`` and ``sample_counter``: the order a
  sample's rows were measured in. SQLite kept it as rowid, which PostgreSQL has no
  equivalent of; existing SQLite rows get their rowid.
* ``run_campaign``: the campaign and pair a run belongs to (campaign.py).
* ``run_stack``: each host's network stack configuration per topology (stackconfig.py),
  so `compare` can say two runs' stacks differed.

Format 3 because offlab releases before this one write those tables by position and
would fail half-way: they refuse the store in one line instead.

Revision ID: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

FORMAT_VERSION = "3"


def upgrade() -> None:
    op.add_column("run", sa.Column("writer", sa.Text))
    for table in ("sample_cpu", "sample_offload", "sample_counter"):
        op.add_column(table, sa.Column("seq", sa.Integer))
        if op.get_bind().dialect.name == "sqlite":
            op.execute(f"UPDATE {table} SET seq = rowid")
    op.create_table(
        "run_campaign",
        sa.Column("run_id", sa.Text, primary_key=True),
        sa.Column("campaign", sa.Text, nullable=False),
        sa.Column("pair", sa.Text, nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["run.id"]),
    )
    op.create_table(
        "run_stack",
        sa.Column("run_id", sa.Text, nullable=False),
        sa.Column("place", sa.Text, nullable=False),
        sa.Column("host", sa.Text, nullable=False),
        sa.Column("key", sa.Text, nullable=False),
        sa.Column("value", sa.Text, nullable=False),
        sa.Column("seq", sa.Integer),
        sa.PrimaryKeyConstraint("run_id", "place", "host", "key"),
        sa.ForeignKeyConstraint(["run_id"], ["run.id"]),
    )
    meta = sa.table("meta", sa.column("key", sa.Text), sa.column("value", sa.Text))
    op.execute(meta.update().where(meta.c.key == "format_version").values(value=FORMAT_VERSION))
