"""Types a database engineer expects, on the real PostgreSQL (tests/pgserver.py), and the
upgrade to them from every released format: BIGINT ids and packet counts, timestamptz
times, a CHECK on the run's status, `run_stack.seq` unique per run, a writer named by a
hashed machine id and its process's start time."""

from __future__ import annotations

import json
import random
from dataclasses import replace

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import IntegrityError

from fixtures.make_store import fixture_cases, fixture_run_info, make_samples
from offlab.store import writer
from offlab.run.store_health import upgrade_store
from offlab.store.location import parse
from offlab.store.schema import head_revision
from offlab.store.store import Store


def _sql(url: str, statement: str, **params):
    engine = create_engine(parse(url).url)
    with engine.begin() as conn:
        result = conn.execute(text(statement), params)
        rows = result.all() if result.returns_rows else None
    engine.dispose()
    return rows


def test_postgresql_columns_have_the_right_types(pg_url):
    types = dict(_sql(pg_url, "SELECT table_name || '.' || column_name, data_type FROM information_schema.columns "
                              "WHERE table_schema = 'public'"))
    assert types["run.started_at"] == types["sample.started_at"] == "timestamp with time zone"
    assert types["sample.id"] == types["sample_counter.sample_id"] == types["sample.total_packets"] == "bigint"


def test_a_packet_count_above_2_to_the_31_is_stored(store_at):
    case = next(c for c in fixture_cases() if c.traffic.protocol == "udp")
    (one,) = make_samples(case, random.Random(7), runs=1)
    big = replace(one, total_packets=2**40 + 3, lost_packets=2**33)
    with Store(store_at) as store:
        store.begin_run(fixture_run_info())
        store.add_sample("fixture-run", case, big)
    with Store(store_at, readonly=True) as reader:
        assert reader.load_run("fixture-run").samples[case.key] == (big,)


def test_the_database_refuses_an_unknown_status(pg_url):
    with Store(pg_url) as store:
        store.begin_run(fixture_run_info())
        with pytest.raises(IntegrityError), store._engine.begin() as conn:
            conn.execute(text("UPDATE run SET status = 'done' WHERE id = 'fixture-run'"))


def test_stack_order_is_unique_per_run_when_a_host_records_again(store_at):
    with Store(store_at) as store:
        store.begin_run(fixture_run_info())
        store.record_stack("fixture-run", "bare", "sender", {"a": "1", "b": "2"})
        store.record_stack("fixture-run", "bare", "receiver", {"c": "3"})
        store.record_stack("fixture-run", "bare", "sender", {"a": "1", "b": "2"})  # resumed: replaced
        store.record_stack("fixture-run", "bare", "other", {"d": "4"})
        assert list(store.load_run("fixture-run").stack["bare"]) == ["receiver", "sender", "other"]
        with store._engine.connect() as conn:
            assert conn.execute(text("SELECT count(*) - count(DISTINCT seq) FROM run_stack")).scalar() == 0


def test_a_writer_records_a_hashed_machine_and_its_process_start():
    me = writer.current()
    machine_id = writer._read(writer.MACHINE_ID)
    assert machine_id == "" or machine_id not in json.dumps(me)
    assert me["start"] == writer.process_start(me["pid"]) is not None
    reused = dict(me, start=me["start"] - 1)  # this pid, another process's start
    assert writer.killed_here(reused, "", me)
    assert not writer.killed_here(me, "", me)


def _revision_0002_with_rows(url: str) -> None:
    """A PostgreSQL store as offlab with revision 0002 wrote it: epoch doubles, 4-byte ids,
    a raw machine-id, two stack rows that drew the same seq."""
    from alembic import command
    from offlab.store.schema import _config
    engine = create_engine(parse(url).url)
    with engine.begin() as connection:
        command.upgrade(_config(connection), "0002")
        connection.execute(text(
            "INSERT INTO run (id, plan, started_at, finished_at, status, command_line, kernel, cpu_model, cores,"
            " host, notes, tool_versions, writer) VALUES ('old', 'quick', 1790000000.25, 1790000100.5, 'complete',"
            " 'offlab run', '6.1', 'cpu', 2, 'labhost', '', '{}', :w)"),
            {"w": json.dumps({"machine": "raw-machine-id-0123", "boot": "b", "pid": 1})})
        connection.execute(text(
            "INSERT INTO \"case\" (run_id, key, position, scenario, mtu, profile_name, profile_side,"
            " profile_features, traffic) VALUES ('old', 'k', 0, 'bare', 1500, 'all-on', 'tx', '{}',"
            " '{\"protocol\": \"tcp\", \"duration_s\": 1.0}')"))
        connection.execute(text(
            "INSERT INTO sample (run_id, case_key, repetition, started_at, duration_s, throughput_bps, sender_bps,"
            " retransmits, roles) VALUES ('old', 'k', 0, 1790000001.125, 1.0, 1e9, 1e9, 5, '{}')"))
        connection.execute(text(
            "INSERT INTO run_stack (run_id, place, host, key, value, seq) VALUES"
            " ('old', 'bare', 'sender', 'x', '1', 0), ('old', 'bare', 'receiver', 'y', '2', 0)"))
    engine.dispose()


def test_a_revision_0002_postgresql_store_is_upgraded_with_its_rows(pg_empty_url):
    _revision_0002_with_rows(pg_empty_url)
    upgrade_store(parse(pg_empty_url))
    assert _sql(pg_empty_url, "SELECT version_num FROM alembic_version") == [(head_revision(),)]
    assert _sql(pg_empty_url, "SELECT value FROM meta WHERE key = 'format_version'") == [("4",)]
    with Store(pg_empty_url, readonly=True) as reader:
        old = reader.load_run("old")
    assert old.info.started_at == 1790000000.25 and old.finished_at == 1790000100.5
    assert old.samples["k"][0].started_at == 1790000001.125 and old.samples["k"][0].retransmits == 5
    assert sorted(_sql(pg_empty_url, "SELECT seq FROM run_stack")) == [(0,), (1,)]
    (stored,) = _sql(pg_empty_url, "SELECT writer FROM run")[0]
    assert "raw-machine-id" not in json.dumps(stored) and stored["machine"] == writer.machine_key(
        "raw-machine-id-0123", "labhost")


DOCUMENT_COLUMNS = ("run.tool_versions", "run.settings", "run.host_facts", "run.writer", "case.profile_features",
                    "case.traffic", "case.topology", "case.params", "case.datapath", "sample.roles",
                    "sample.role_hosts")


def test_postgresql_documents_are_jsonb(pg_url):
    types = dict(_sql(pg_url, "SELECT table_name || '.' || column_name, data_type FROM information_schema.columns "
                              "WHERE table_schema = 'public'"))
    assert {column: types[column] for column in DOCUMENT_COLUMNS} == {column: "jsonb" for column in DOCUMENT_COLUMNS}


def test_documents_read_back_the_same_whatever_order_the_engine_keeps(store_at):
    """JSONB orders keys by length, then bytes; SQLite's text keeps them as written. Both
    read back in sorted order: the same record from either engine."""
    case = next(iter(fixture_cases()))
    case = replace(case, profile=replace(case.profile, features={"tx-checksumming": False, "gso": False}))
    (one,) = make_samples(case, random.Random(3), runs=1)
    one = replace(one, roles={"receiver": 1, "rx": 0}, role_hosts={"receiver": "hostb", "rx": "hosta"})
    info = replace(fixture_run_info(), tool_versions={"offlab": "1", "iperf3": "3.12"},
                   host_facts={"sender": {"rx steering": "rps", "gro": "on"}})
    with Store(store_at) as store:
        store.begin_run(info)
        store.add_sample("fixture-run", case, one)
    with Store(store_at, readonly=True) as reader:
        loaded = reader.load_run("fixture-run")
    assert list(loaded.cases[0].profile.features) == ["gso", "tx-checksumming"]
    assert list(loaded.samples[case.key][0].roles) == list(loaded.samples[case.key][0].role_hosts) == ["receiver", "rx"]
    assert list(loaded.info.tool_versions) == ["iperf3", "offlab"]
    assert list(loaded.info.host_facts["sender"]) == ["gro", "rx steering"]
    assert loaded.samples[case.key] == (one,)


OLD_KEY = "bare/mtu1500/tx:no-csum/tcp"


def _revision_0003_with_rows(url: str) -> None:
    """A PostgreSQL store as offlab with revision 0003 wrote it: JSON as text, keys in the
    order the records had them, a datapath left empty."""
    from alembic import command
    from offlab.store.schema import _config
    engine = create_engine(parse(url).url)
    with engine.begin() as connection:
        command.upgrade(_config(connection), "0003")
        connection.execute(text(
            "INSERT INTO run (id, plan, started_at, finished_at, status, command_line, kernel, cpu_model, cores,"
            " host, notes, tool_versions, host_facts, settings) VALUES ('old', 'quick', now(), now(), 'complete',"
            " 'offlab run', '6.1', 'cpu', 2, 'labhost', '', :tools, :facts, '')"),
            {"tools": '{"offlab": "1", "iperf3": "3.12"}', "facts": '{"sender": {"rx steering": "rps", "gro": "on"}}'})
        connection.execute(text(
            "INSERT INTO \"case\" (run_id, key, position, scenario, mtu, profile_name, profile_side,"
            " profile_features, traffic, params, datapath) VALUES ('old', :key, 0, 'bare', 1500, 'no-csum', 'tx',"
            " '{\"tx-checksumming\": false, \"gso\": false}', '{\"protocol\": \"tcp\", \"duration_s\": 1.0}',"
            " '{\"path\": \"direct\", \"combination\": 2}', '')"), {"key": OLD_KEY})
        connection.execute(text(
            "INSERT INTO sample (run_id, case_key, repetition, started_at, duration_s, throughput_bps, sender_bps,"
            " roles, role_hosts) VALUES ('old', :key, 0, now(), 1.0, 1e9, 1e9, '{\"receiver\": 1, \"rx\": 0}', '')"),
            {"key": OLD_KEY})
    engine.dispose()


def test_a_revision_0003_postgresql_store_gets_jsonb_with_its_rows(pg_empty_url, tmp_path):
    from offlab.store.runcopy import copy_runs
    _revision_0003_with_rows(pg_empty_url)
    upgrade_store(parse(pg_empty_url))
    assert _sql(pg_empty_url, "SELECT version_num FROM alembic_version") == [(head_revision(),)]
    assert _sql(pg_empty_url, "SELECT count(*) FROM information_schema.columns WHERE data_type = 'jsonb'"
                              " AND table_schema = 'public'") == [(len(DOCUMENT_COLUMNS),)]
    assert _sql(pg_empty_url, "SELECT roles->>'rx', params->>'path', role_hosts, datapath, settings FROM \"case\""
                              " JOIN sample ON sample.run_id = \"case\".run_id, run") == [("0", "direct", {}, None, {})]
    with Store(pg_empty_url, readonly=True) as reader:
        old = reader.load_run("old")
    assert list(old.cases[0].profile.features) == ["gso", "tx-checksumming"]
    assert old.cases[0].params == {"path": "direct", "combination": 2} and old.cases[0].datapath is None
    assert list(old.info.tool_versions) == ["iperf3", "offlab"] and old.info.settings is None
    assert old.info.host_facts == {"sender": {"gro": "on", "rx steering": "rps"}}
    copy_runs(["old"], pg_empty_url, tmp_path / "copy.sqlite")
    with Store(tmp_path / "copy.sqlite", readonly=True) as reader:
        copied = reader.load_run("old")
    assert old.samples[OLD_KEY][0].roles == {"receiver": 1, "rx": 0}
    assert copied == old and list(copied.cases[0].profile.features) == list(old.cases[0].profile.features)
