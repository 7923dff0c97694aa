"""Results format 2, the schema of the hand-written store this history starts from.

It creates only the tables a store lacks: an empty database gets all of them, and a
format-2 SQLite store written before Alembic (which has them, perhaps without
``case_adaptive``) is adopted as it is. Format-1 stores are first brought to format 2
by offlab.store.migrations (SQLite only: PostgreSQL stores begin here).

Revision ID: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

FORMAT_VERSION = "2"


def _tables() -> list[tuple[str, list]]:
    text, dbl, integer = sa.Text, sa.Double, sa.Integer
    nn = {"nullable": False}
    return [
        ("meta", [sa.Column("key", text, primary_key=True), sa.Column("value", text, **nn)]),
        ("run", [
            sa.Column("id", text, primary_key=True), sa.Column("plan", text, **nn),
            sa.Column("started_at", dbl, **nn), sa.Column("finished_at", dbl),
            sa.Column("status", text, **nn), sa.Column("command_line", text, **nn),
            sa.Column("kernel", text, **nn), sa.Column("cpu_model", text, **nn),
            sa.Column("cores", integer, **nn), sa.Column("host", text, **nn),
            sa.Column("notes", text, **nn), sa.Column("tool_versions", text, **nn),
            sa.Column("settings", text, server_default="{}", **nn),
            sa.Column("host_facts", text, server_default="{}", **nn)]),
        ("case", [
            sa.Column("run_id", text, **nn), sa.Column("key", text, **nn),
            sa.Column("position", integer, **nn), sa.Column("scenario", text, **nn),
            sa.Column("mtu", integer, **nn), sa.Column("profile_name", text, **nn),
            sa.Column("profile_side", text, **nn), sa.Column("profile_features", text, **nn),
            sa.Column("traffic", text, **nn),
            sa.Column("topology", text, server_default="{}", **nn),
            sa.Column("params", text, server_default="{}", **nn),
            sa.Column("datapath", text), sa.Column("label", text, server_default="", **nn),
            sa.PrimaryKeyConstraint("run_id", "key"),
            sa.ForeignKeyConstraint(["run_id"], ["run.id"])]),
        ("sample", [
            sa.Column("id", integer, primary_key=True, autoincrement=True),
            sa.Column("run_id", text, **nn), sa.Column("case_key", text, **nn),
            sa.Column("repetition", integer, **nn), sa.Column("started_at", dbl, **nn),
            sa.Column("duration_s", dbl, **nn), sa.Column("throughput_bps", dbl, **nn),
            sa.Column("sender_bps", dbl, **nn), sa.Column("retransmits", integer),
            sa.Column("lost_packets", integer), sa.Column("total_packets", integer),
            sa.Column("roles", text, **nn), sa.Column("role_hosts", text, server_default="{}", **nn),
            sa.UniqueConstraint("run_id", "case_key", "repetition"),
            sa.ForeignKeyConstraint(["run_id", "case_key"], ["case.run_id", "case.key"])]),
        ("sample_cpu", [
            sa.Column("sample_id", integer, **nn), sa.Column("ordinal", integer, **nn),
            sa.Column("core", integer, **nn), sa.Column("class", text, **nn),
            sa.Column("percent", dbl, **nn), sa.Column("host", text, server_default="", **nn),
            sa.PrimaryKeyConstraint("sample_id", "ordinal", "class"),
            sa.ForeignKeyConstraint(["sample_id"], ["sample.id"])]),
        ("sample_offload", [
            sa.Column("sample_id", integer, **nn), sa.Column("iface", text, **nn),
            sa.Column("feature", text, **nn), sa.Column("is_on", sa.Boolean, **nn),
            sa.Column("is_fixed", sa.Boolean, **nn), sa.Column("requested", sa.Boolean),
            sa.Column("layer", text, server_default="ethtool", **nn),
            sa.PrimaryKeyConstraint("sample_id", "layer", "iface", "feature"),
            sa.ForeignKeyConstraint(["sample_id"], ["sample.id"])]),
        ("sample_counter", [
            sa.Column("sample_id", integer, **nn), sa.Column("name", text, **nn),
            sa.Column("value", dbl, **nn),
            sa.PrimaryKeyConstraint("sample_id", "name"),
            sa.ForeignKeyConstraint(["sample_id"], ["sample.id"])]),
        ("sample_interval", [
            sa.Column("sample_id", integer, **nn), sa.Column("ordinal", integer, **nn),
            sa.Column("start_s", dbl, **nn), sa.Column("end_s", dbl, **nn),
            sa.Column("bps", dbl, **nn), sa.Column("warmup", sa.Boolean, **nn),
            sa.PrimaryKeyConstraint("sample_id", "ordinal"),
            sa.ForeignKeyConstraint(["sample_id"], ["sample.id"])]),
        ("sample_probe", [
            sa.Column("sample_id", integer, **nn), sa.Column("ordinal", integer, **nn),
            sa.Column("offered_bps", dbl, **nn), sa.Column("sent_bps", dbl, **nn),
            sa.Column("received_bps", dbl, **nn), sa.Column("loss_percent", dbl, **nn),
            sa.PrimaryKeyConstraint("sample_id", "ordinal"),
            sa.ForeignKeyConstraint(["sample_id"], ["sample.id"])]),
        ("case_adaptive", [
            sa.Column("run_id", text, **nn), sa.Column("case_key", text, **nn),
            sa.Column("target", dbl, **nn), sa.Column("min_runs", integer, **nn),
            sa.Column("max_runs", integer, **nn), sa.Column("runs", integer, **nn),
            sa.Column("half_width", dbl), sa.Column("reached", sa.Boolean, **nn),
            sa.PrimaryKeyConstraint("run_id", "case_key"),
            sa.ForeignKeyConstraint(["run_id", "case_key"], ["case.run_id", "case.key"])]),
    ]


def upgrade() -> None:
    inspector = sa.inspect(op.get_bind())
    for name, columns in _tables():
        if not inspector.has_table(name):
            op.create_table(name, *columns)
    meta = sa.table("meta", sa.column("key", sa.Text), sa.column("value", sa.Text))
    if op.get_bind().execute(sa.select(meta.c.value).where(meta.c.key == "format_version")).first() is None:
        op.bulk_insert(meta, [{"key": "format_version", "value": FORMAT_VERSION}])
