"""The store's tables as they are at the newest schema revision (SQLAlchemy Core).

One description for both engines: SQLAlchemy renders it for SQLite and PostgreSQL.
Queries in store.py are built from these objects; the migrations in alembic/versions
create and change the tables step by step and never import this module (a migration
describes the schema as it was at its revision, not as it is now).

Types chosen to mean the same on both engines: DOUBLE PRECISION for every measured
figure (PostgreSQL's REAL is 4 bytes and would round them), BIGINT for ids and packet
counts (SQLite's INTEGER is 64-bit already, and its autoincrement needs that name),
``timestamptz`` on PostgreSQL for times (epoch seconds on SQLite; both read back as epoch
seconds to the microsecond), BOOLEAN for flags (SQLite keeps 0/1, which older stores
already hold), ``JSONB`` on PostgreSQL for the documents of typed records (JSON text on
SQLite; both read back as Python objects, and codec.py decodes them whatever their key
order), so that a run copied from one engine to the other reads back equal.
"""

from __future__ import annotations

from datetime import datetime, timezone

from sqlalchemy import (JSON, BigInteger, Boolean, CheckConstraint, Column, DateTime, Double, ForeignKeyConstraint,
                        Index, Integer, MetaData, PrimaryKeyConstraint, Table, Text, UniqueConstraint)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.types import TypeDecorator

metadata = MetaData()


class CounterValue(TypeDecorator):
    """A counter delta: a packet count or a rate. Stored as a double on both engines
    (exact for counts below 2**53); a whole number reads back as an int, which is what
    format-2 SQLite stores (an untyped column) gave back for counts."""

    impl = Double
    cache_ok = True

    def process_result_value(self, value, dialect):
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return value


Id = BigInteger().with_variant(Integer, "sqlite")
"""A 64-bit id: BIGINT on PostgreSQL; INTEGER on SQLite, the only name that autoincrements."""
Count = BigInteger().with_variant(Integer, "sqlite")
Document = JSON(none_as_null=True).with_variant(JSONB(none_as_null=True), "postgresql")
"""A JSON object (codec.py): JSONB on PostgreSQL, JSON text on SQLite; a dict in Python
on both, SQL NULL for None."""


class Epoch(TypeDecorator):
    """A time: epoch seconds (a float) in Python, ``timestamptz`` on PostgreSQL, a double
    on SQLite; microseconds on both, so that a run reads back equal from either."""

    impl = Double
    cache_ok = True

    def load_dialect_impl(self, dialect):
        return dialect.type_descriptor(DateTime(timezone=True) if dialect.name == "postgresql" else Double())

    def process_bind_param(self, value, dialect):
        if value is None:
            return None
        moment = datetime.fromtimestamp(round(float(value), 6), timezone.utc)
        return moment if dialect.name == "postgresql" else moment.timestamp()

    def process_result_value(self, value, dialect):
        if value is None:
            return None
        if isinstance(value, datetime):
            return value.timestamp()
        return datetime.fromtimestamp(round(float(value), 6), timezone.utc).timestamp()


meta = Table(
    "meta", metadata,
    Column("key", Text, primary_key=True),
    Column("value", Text, nullable=False),
)

run = Table(
    "run", metadata,
    Column("id", Text, primary_key=True),
    Column("plan", Text, nullable=False),
    Column("started_at", Epoch, nullable=False),
    Column("finished_at", Epoch),
    Column("status", Text, CheckConstraint("status IN ('running', 'complete', 'interrupted', 'failed')",
                                           name="run_status"), nullable=False),
    Column("command_line", Text, nullable=False),
    Column("kernel", Text, nullable=False),
    Column("cpu_model", Text, nullable=False),
    Column("cores", Integer, nullable=False),
    Column("host", Text, nullable=False),
    Column("notes", Text, nullable=False),
    Column("tool_versions", Document, nullable=False),
    Column("settings", Document, nullable=False, server_default="{}"),
    Column("host_facts", Document, nullable=False, server_default="{}"),
    Column("writer", Document),
    Column("sample_count", Count, nullable=False, server_default="0"),
    # Kept by each sample's own transaction: `list` prints it without counting samples.
    Column("case_count", Count, nullable=False, server_default="0"),
    # Kept by each case's own transaction (revision 0005): `list` reads no case row.
    # Which offlab process writes the run (writer.py): how a later run on the same
    # machine tells a killed run from a live one without touching other machines' runs.
)

case = Table(
    "case", metadata,
    Column("run_id", Text, nullable=False),
    Column("key", Text, nullable=False),
    Column("position", Integer, nullable=False),
    Column("scenario", Text, nullable=False),
    Column("mtu", Integer, nullable=False),
    Column("profile_name", Text, nullable=False),
    Column("profile_side", Text, nullable=False),
    Column("profile_features", Document, nullable=False),
    Column("traffic", Document, nullable=False),
    Column("topology", Document, nullable=False, server_default="{}"),
    Column("params", Document, nullable=False, server_default="{}"),
    Column("datapath", Document),
    Column("label", Text, nullable=False, server_default=""),
    PrimaryKeyConstraint("run_id", "key"),
    ForeignKeyConstraint(["run_id"], ["run.id"]),
    Index("case_key", "key"),  # history: the runs that measured a case
)

sample = Table(
    "sample", metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("run_id", Text, nullable=False),
    Column("case_key", Text, nullable=False),
    Column("repetition", Integer, nullable=False),
    Column("started_at", Epoch, nullable=False),
    Column("duration_s", Double, nullable=False),
    Column("throughput_bps", Double, nullable=False),
    Column("sender_bps", Double, nullable=False),
    Column("retransmits", Count),
    Column("lost_packets", Count),
    Column("total_packets", Count),
    Column("roles", Document, nullable=False),
    Column("role_hosts", Document, nullable=False, server_default="{}"),
    # The sample's headline CPU (headline.py), so that a history aggregates it in the
    # database: whether its CPU can be used, and busy CPU per Gbit/s if so. NULL
    # cpu_timed: stored before revision 0005 (a history reads those samples' rows).
    Column("cpu_timed", Boolean),
    Column("cpu_per_gbps", Double),
    UniqueConstraint("run_id", "case_key", "repetition"),
    ForeignKeyConstraint(["run_id", "case_key"], ["case.run_id", "case.key"]),
)

sample_cpu = Table(
    "sample_cpu", metadata,
    Column("sample_id", Id, nullable=False),
    Column("ordinal", Integer, nullable=False),
    Column("core", Integer, nullable=False),
    Column("class", Text, nullable=False),
    Column("percent", Double, nullable=False),
    Column("host", Text, nullable=False, server_default=""),
    Column("seq", Integer),
    PrimaryKeyConstraint("sample_id", "ordinal", "class"),
    ForeignKeyConstraint(["sample_id"], ["sample.id"]),
)

sample_offload = Table(
    "sample_offload", metadata,
    Column("sample_id", Id, nullable=False),
    Column("iface", Text, nullable=False),
    Column("feature", Text, nullable=False),
    Column("is_on", Boolean, nullable=False),
    Column("is_fixed", Boolean, nullable=False),
    Column("requested", Boolean),
    Column("layer", Text, nullable=False, server_default="ethtool"),
    Column("seq", Integer),
    PrimaryKeyConstraint("sample_id", "layer", "iface", "feature"),
    ForeignKeyConstraint(["sample_id"], ["sample.id"]),
)

sample_counter = Table(
    "sample_counter", metadata,
    Column("sample_id", Id, nullable=False),
    Column("name", Text, nullable=False),
    Column("value", CounterValue, nullable=False),
    Column("seq", Integer),
    PrimaryKeyConstraint("sample_id", "name"),
    ForeignKeyConstraint(["sample_id"], ["sample.id"]),
)

sample_interval = Table(
    "sample_interval", metadata,
    Column("sample_id", Id, nullable=False),
    Column("ordinal", Integer, nullable=False),
    Column("start_s", Double, nullable=False),
    Column("end_s", Double, nullable=False),
    Column("bps", Double, nullable=False),
    Column("warmup", Boolean, nullable=False),
    PrimaryKeyConstraint("sample_id", "ordinal"),
    ForeignKeyConstraint(["sample_id"], ["sample.id"]),
)

sample_probe = Table(
    "sample_probe", metadata,
    Column("sample_id", Id, nullable=False),
    Column("ordinal", Integer, nullable=False),
    Column("offered_bps", Double, nullable=False),
    Column("sent_bps", Double, nullable=False),
    Column("received_bps", Double, nullable=False),
    Column("loss_percent", Double, nullable=False),
    PrimaryKeyConstraint("sample_id", "ordinal"),
    ForeignKeyConstraint(["sample_id"], ["sample.id"]),
)

case_adaptive = Table(
    "case_adaptive", metadata,
    Column("run_id", Text, nullable=False),
    Column("case_key", Text, nullable=False),
    Column("target", Double, nullable=False),
    Column("min_runs", Integer, nullable=False),
    Column("max_runs", Integer, nullable=False),
    Column("runs", Integer, nullable=False),
    Column("half_width", Double),
    Column("reached", Boolean, nullable=False),
    PrimaryKeyConstraint("run_id", "case_key"),
    ForeignKeyConstraint(["run_id", "case_key"], ["case.run_id", "case.key"]),
)

run_campaign = Table(
    "run_campaign", metadata,
    Column("run_id", Text, primary_key=True),
    Column("campaign", Text, nullable=False),
    Column("pair", Text, nullable=False),
    ForeignKeyConstraint(["run_id"], ["run.id"]),
)
"""A run made as one pair's part of a campaign (campaign.py): the campaign's id and the
pair's name in the hosts file."""

run_stack = Table(
    "run_stack", metadata,
    Column("run_id", Text, nullable=False),
    Column("place", Text, nullable=False),
    Column("host", Text, nullable=False),
    Column("key", Text, nullable=False),
    Column("value", Text, nullable=False),
    Column("seq", Integer),
    PrimaryKeyConstraint("run_id", "place", "host", "key"),
    ForeignKeyConstraint(["run_id"], ["run.id"]),
    Index("run_stack_run_seq", "run_id", "seq", unique=True),
)
"""Each host's network stack configuration per topology of a run (stackconfig.py):
place ("bare · MTU 1500") × host × setting; ``seq`` keeps the order settings were read in."""
