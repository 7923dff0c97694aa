"""Types a database engineer expects, and a run's writer told apart without trusting a
cloned machine-id (results format 4).

PostgreSQL only (SQLite's column types are affinities: its INTEGER already holds 64
bits and its times stay epoch doubles):

* ``sample.id`` and every ``sample_id``, and the packet counters (retransmits, lost and
  total packets): BIGINT, with the id's sequence — a packet count above 2**31 failed;
* ``run.started_at``, ``run.finished_at``, ``sample.started_at``: ``timestamptz`` from
  the epoch seconds they held (``to_timestamp``);
* a CHECK on ``run.status``.

Both engines:

* ``run_stack.seq`` unique per run (two hosts recording at once could draw the same
  one): existing rows renumbered in their order, then a unique index;
* ``run.sample_count``, kept by each sample's transaction (so that `list` counts no
  samples), filled from the samples stored; an index on ``case.key`` (history);
* ``run.writer``'s raw ``/etc/machine-id`` replaced by its hash with the run's host
  name (storage/writer.py), the way writers record it from now on.

Revision ID: 0003
"""

import json

import sqlalchemy as sa
from alembic import op

from offlab.store.writer import machine_key

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

FORMAT_VERSION = "4"
STATUSES = ("running", "complete", "interrupted", "failed")
_SAMPLE_CHILDREN = ("sample_cpu", "sample_offload", "sample_counter", "sample_interval", "sample_probe")


def _postgresql_types() -> None:
    op.execute("ALTER TABLE sample ALTER COLUMN id TYPE BIGINT")
    op.execute("ALTER SEQUENCE IF EXISTS sample_id_seq AS BIGINT")
    for table in _SAMPLE_CHILDREN:
        op.execute(f"ALTER TABLE {table} ALTER COLUMN sample_id TYPE BIGINT")
    for column in ("retransmits", "lost_packets", "total_packets"):
        op.execute(f"ALTER TABLE sample ALTER COLUMN {column} TYPE BIGINT")
    for table, column in (("run", "started_at"), ("run", "finished_at"), ("sample", "started_at")):
        op.execute(f"ALTER TABLE {table} ALTER COLUMN {column} TYPE TIMESTAMPTZ USING to_timestamp({column})")
    op.create_check_constraint("run_status", "run", sa.column("status").in_(STATUSES))


def _unique_stack_order(bind) -> None:
    stack = sa.table("run_stack", *(sa.column(c) for c in ("run_id", "place", "host", "key", "seq")))
    rows = bind.execute(sa.select(stack).order_by(stack.c.run_id, stack.c.seq, stack.c.place,
                                                  stack.c.host, stack.c.key)).all()
    numbered, count = [], {}
    for r in rows:
        n = count.get(r.run_id, 0)
        count[r.run_id] = n + 1
        if r.seq != n:
            numbered.append({"r": r.run_id, "p": r.place, "h": r.host, "k": r.key, "n": n})
    if numbered:
        bind.execute(sa.text("UPDATE run_stack SET seq = :n WHERE run_id = :r AND place = :p AND host = :h "
                             "AND key = :k"), numbered)
    op.create_index("run_stack_run_seq", "run_stack", ["run_id", "seq"], unique=True)


def _hashed_writers(bind) -> None:
    run = sa.table("run", sa.column("id"), sa.column("host"), sa.column("writer"))
    for r in bind.execute(sa.select(run).where(run.c.writer.is_not(None))).all():
        writer = json.loads(r.writer)
        if "machine" in writer:
            writer["machine"] = machine_key(str(writer["machine"]), r.host)
            bind.execute(run.update().where(run.c.id == r.id).values(writer=json.dumps(writer, sort_keys=True)))


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        _postgresql_types()
    _unique_stack_order(bind)
    _hashed_writers(bind)
    op.add_column("run", sa.Column("sample_count", sa.BigInteger().with_variant(sa.Integer, "sqlite"),
                                   nullable=False, server_default="0"))
    op.execute("UPDATE run SET sample_count = (SELECT count(*) FROM sample WHERE sample.run_id = run.id)")
    op.create_index("case_key", "case", ["key"])
    meta = sa.table("meta", sa.column("key", sa.Text), sa.column("value", sa.Text))
    op.execute(meta.update().where(meta.c.key == "format_version").values(value=FORMAT_VERSION))
