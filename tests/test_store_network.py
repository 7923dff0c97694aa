"""No sample lost to the network: a connection that dies while a run measures (a server
restart, a failover, an idle timeout) or in the middle of a sample's transaction is
reconnected and the sample stored once (storage/retry.py). Against the real PostgreSQL
of tests/pgserver.py: the server is restarted, or the writer's backend killed."""

from __future__ import annotations

import random

from sqlalchemy import event

from fixtures.make_store import fixture_cases, fixture_run_info, make_samples
from offlab.store import retry
from offlab.store.store import Store, StoreError

import pytest


def test_a_restart_between_samples_loses_none(pg_server, pg_url):
    case = fixture_cases()[0]
    samples = make_samples(case, random.Random(4), runs=3)
    with Store(pg_url) as store:
        run_id = store.begin_run(fixture_run_info())
        store.add_sample(run_id, case, samples[0])
        pg_server.restart()  # the pooled connection is dead now
        store.add_sample(run_id, case, samples[1])
        pg_server.restart()
        store.add_sample(run_id, case, samples[2])
        store.finish_run(run_id, "complete")
    with Store(pg_url, readonly=True) as reader:
        results = reader.load_run(run_id)
    assert results.status == "complete" and results.samples[case.key] == tuple(samples)


def test_a_connection_killed_inside_a_sample_transaction_is_retried_and_the_sample_stored_once(pg_server, pg_url):
    case = fixture_cases()[0]
    samples = make_samples(case, random.Random(5), runs=2)
    store = Store(pg_url)
    run_id = store.begin_run(fixture_run_info())
    store.add_sample(run_id, case, samples[0])
    killed = []

    @event.listens_for(store._engine, "before_cursor_execute")
    def kill_once(conn, cursor, statement, *args):
        if not killed and statement.startswith("INSERT INTO sample_cpu"):
            pid = conn.exec_driver_sql("SELECT pg_backend_pid()").scalar()
            with pg_server.admin() as admin:
                admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
            killed.append(pid)

    store.add_sample(run_id, case, samples[1])  # the sample row was written, then the connection cut
    store.finish_run(run_id, "complete")
    store.close()
    assert killed
    with Store(pg_url, readonly=True) as reader:
        assert reader.load_run(run_id).samples[case.key] == tuple(samples)


def test_a_constraint_is_not_retried(pg_url):
    case = fixture_cases()[0]
    (one,) = make_samples(case, random.Random(6), runs=1)
    slept = []
    with Store(pg_url) as store:
        run_id = store.begin_run(fixture_run_info())
        store.add_sample(run_id, case, one)
        retry_sleep, retry.time.sleep = retry.time.sleep, slept.append
        try:
            with pytest.raises(StoreError, match="already stored"):
                store.add_sample(run_id, case, one)
        finally:
            retry.time.sleep = retry_sleep
    assert slept == []
