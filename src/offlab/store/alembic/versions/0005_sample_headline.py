"""Each sample's headline CPU beside it, and each run's number of cases (results format 4
still).

``sample.cpu_timed`` (whether the sample's CPU can be used: its windows matched, no
refusal) and ``sample.cpu_per_gbps`` (busy CPU per Gbit/s of the cores the report
counts, headline.py), written with the sample. A history then asks the database for
each case's count, mean and spread of throughput and of this figure (a GROUP BY over
the run's samples) instead of reading every sample and its CPU rows.

Both columns may be NULL and are added without a default, so PostgreSQL changes only
its catalogue (no rewrite of the sample table). Samples stored before keep NULL in
``cpu_timed``: a history reads those runs' samples as before.

``run.case_count``, kept by each case's transaction as ``sample_count`` is by each
sample's: `list` prints it without grouping every run's case rows. Filled from the cases
stored (one UPDATE of the run table).

Revision ID: 0005
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("sample", sa.Column("cpu_timed", sa.Boolean(), nullable=True))
    op.add_column("sample", sa.Column("cpu_per_gbps", sa.Double(), nullable=True))
    count = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
    op.add_column("run", sa.Column("case_count", count, nullable=False, server_default="0"))
    op.execute('UPDATE run SET case_count = (SELECT count(*) FROM "case" WHERE "case".run_id = run.id)')
