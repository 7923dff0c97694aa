"""The results store on both engines (SQLite file, PostgreSQL server): round trip, commit
per sample, counts, errors. Schema versions: test_store_schema.py."""

import random
import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest

from fixtures.make_store import fixture_cases, fixture_run_info, make_samples
from offlab.records import CpuShare, Sample
from offlab.store.store import Store, StoreError
from hangguard import HANG_S


def test_round_trip_rebuilds_identical_records(store_at):
    path = store_at
    rng = random.Random(1)
    written = {}
    with Store(path) as store:
        run_id = store.begin_run(fixture_run_info())
        for case in fixture_cases()[:5]:
            written[case.key] = tuple(make_samples(case, rng, runs=3))
            for sample in written[case.key]:
                store.add_sample(run_id, case, sample)
        store.finish_run(run_id, "complete", finished_at=123.0)
    with Store(path) as store:
        results = store.load_run(run_id)
    assert results.info == fixture_run_info()
    assert results.status == "complete" and results.finished_at == 123.0
    assert results.cases == tuple(fixture_cases()[:5])
    assert dict(results.samples) == written


def test_optional_fields_and_core_order_survive(store_at):
    case = fixture_cases()[0]
    sample = Sample(case_key=case.key, repetition=0, started_at=1.5, duration_s=2.0,
                    throughput_bps=1e9, sender_bps=1e9,
                    cpu=(CpuShare(3, {"idle": 100.0}), CpuShare(1, {"usr": 50.0, "idle": 50.0})),
                    counters={"n": 7, "x": 0.25})
    with Store(store_at) as store:
        run_id = store.begin_run(fixture_run_info())
        store.add_sample(run_id, case, sample)
        (loaded,) = store.load_run(run_id).samples[case.key]
    assert loaded == sample
    assert [c.core for c in loaded.cpu] == [3, 1]
    assert loaded.retransmits is None and loaded.loss_percent is None


def test_each_sample_is_visible_to_another_reader_before_the_run_ends(store_at):
    case = fixture_cases()[0]
    samples = make_samples(case, random.Random(2), runs=2)
    writer = Store(store_at)
    run_id = writer.begin_run(fixture_run_info())
    writer.add_sample(run_id, case, samples[0])
    with Store(store_at, readonly=True) as reader:  # its own connection, as `offlab report` has
        assert reader.completed_counts(run_id) == {case.key: 1}
    writer.add_sample(run_id, case, samples[1])
    with Store(store_at, readonly=True) as reader:  # the next command
        assert reader.completed_counts(run_id) == {case.key: 2}
        assert reader.load_run(run_id).status == "running"
    if isinstance(store_at, Path):
        reader = sqlite3.connect(store_at)
        assert reader.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        reader.close()
    writer.close()


def test_add_case_is_idempotent_and_keeps_plan_order(store_at):
    cases = fixture_cases()[:3]
    with Store(store_at) as store:
        run_id = store.begin_run(fixture_run_info())
        for case in cases + cases[::-1]:
            store.add_case(run_id, case)
        results = store.load_run(run_id)
        assert results.cases == tuple(cases)
        assert all(results.samples[c.key] == () for c in cases)


def test_completed_counts(store_at):
    cases = fixture_cases()[:3]
    rng = random.Random(3)
    with Store(store_at) as store:
        run_id = store.begin_run(fixture_run_info())
        for case in cases:
            store.add_case(run_id, case)
        for sample in make_samples(cases[1], rng, runs=2):
            store.add_sample(run_id, cases[1], sample)
        assert store.completed_counts(run_id) == {cases[0].key: 0, cases[1].key: 2,
                                                  cases[2].key: 0}


def test_runs_and_latest(store_at):
    with Store(store_at) as store:
        assert store.runs() == [] and store.latest_run_id() is None
        first = store.begin_run(fixture_run_info())
        second = store.begin_run(replace(fixture_run_info(), run_id="b", started_at=2e9))
        store.add_case(second, fixture_cases()[0])
        with Store(store_at) as other:
            other.add_case(second, fixture_cases()[0])  # another writer's: no second case
        store.finish_run(first, "interrupted")
        summaries = store.runs()
        assert [(r.id, r.status, r.cases, r.samples) for r in summaries] == [
            (first, "interrupted", 0, 0), ("b", "running", 1, 0)]
        assert store.latest_run_id() == "b"


def test_errors_are_typed(store_at):
    with Store(store_at) as store:
        run_id = store.begin_run(fixture_run_info())
        with pytest.raises(StoreError, match="already exists"):
            store.begin_run(fixture_run_info())
        with pytest.raises(StoreError, match="status"):
            store.finish_run(run_id, "done")
        with pytest.raises(StoreError, match="no run"):
            store.load_run("nope")
        with pytest.raises(StoreError, match="no run"):
            store.add_case("nope", fixture_cases()[0])
        case_a, case_b = fixture_cases()[:2]
        sample = make_samples(case_a, random.Random(4), runs=1)[0]
        with pytest.raises(StoreError, match="given with case"):
            store.add_sample(run_id, case_b, sample)


def test_a_repetition_cannot_be_stored_twice(store_at):
    case = fixture_cases()[0]
    sample = make_samples(case, random.Random(5), runs=1)[0]
    with Store(store_at) as store:
        run_id = store.begin_run(fixture_run_info())
        store.add_sample(run_id, case, sample)
        with pytest.raises(StoreError, match="already stored"):
            store.add_sample(run_id, case, sample)
        assert store.completed_counts(run_id) == {case.key: 1}


def test_intervals_probes_and_datapath_state_round_trip(store_at):
    from offlab.records import (CaseSpec, DatapathSetting, FeatureState, Interval, OffloadProfile,
                                Params, PortSetting,
                                RateProbe, TrafficSpec)

    case = CaseSpec("middlebox", 1500, OffloadProfile("chkY", "both", {"tx-checksumming": True}),
                    TrafficSpec("udp", 2.0, udp_payload=1472, mode="capacity"),
                    topology=Params(path="a-b", router="offlab-fwd"), params=Params(checksum=True),
                    datapath=DatapathSetting(True, "gso", (("a", PortSetting(frozenset({"csum"}))),)),
                    label="middlebox-fwd-ab")
    sample = Sample(case.key, 0, 1.0, 2.0, 1e9, 1.1e9,
                    datapath={"fwd": {"mode.gso": FeatureState(True, requested=True)}},
                    intervals=(Interval(0.0, 0.5, 9e8, True), Interval(0.5, 1.0, 1e9)),
                    probes=(RateProbe(0.0, 5e9, 1e9, 80.0), RateProbe(2.2e9, 2.2e9, 1e9, 54.5)))
    with Store(store_at) as store:
        store.begin_run(replace(fixture_run_info(), run_id="x"))
        store.add_sample("x", case, sample)
        loaded = store.load_run("x")
    assert loaded.cases == (case,) and loaded.samples[case.key] == (sample,)


WRITER = """
import random, sys
from dataclasses import replace
from fixtures.make_store import fixture_cases, fixture_run_info, make_samples
from offlab.store.store import Store
where, run_id = sys.argv[1], sys.argv[2]
with Store(where) as store:
    store.close_killed_runs()
    store.begin_run(replace(fixture_run_info(), run_id=run_id))
    for case in fixture_cases()[:4]:
        for sample in make_samples(case, random.Random(run_id), runs=5):
            store.add_sample(run_id, case, sample)
    store.finish_run(run_id, "complete")
"""


def test_three_writers_at_once_lose_and_mix_no_sample(store_at):
    import subprocess
    import sys
    Store(store_at).close()
    tests = str(Path(__file__).parent)
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(store_at), f"w{n}"], cwd=tests,
                                stderr=subprocess.PIPE, text=True) for n in range(3)]
    for writer in writers:
        assert writer.wait(timeout=HANG_S) == 0, writer.stderr.read()
    with Store(store_at, readonly=True) as store:
        assert [(r.id, r.status, r.samples) for r in store.runs()] == [(f"w{n}", "complete", 20) for n in range(3)]
        for n in range(3):
            loaded = store.load_run(f"w{n}")
            for case in fixture_cases()[:4]:
                assert loaded.samples[case.key] == tuple(make_samples(case, random.Random(f"w{n}"), runs=5))


def test_only_this_machines_dead_runs_are_closed(store_at):
    import subprocess
    import sys

    from sqlalchemy import update

    from offlab.store import writer
    from offlab.store.tables import run

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    me = writer.current()
    writers = {"live-here": me, "dead-here": dict(me, pid=int(gone)),
               "other-machine": dict(me, machine="another-machine-id", pid=int(gone)),
               "before-reboot": dict(me, boot="an-earlier-boot")}
    with Store(store_at) as store:
        for n, (run_id, who) in enumerate(writers.items()):
            store.begin_run(replace(fixture_run_info(), run_id=run_id, started_at=n))
            with store._engine.begin() as conn:  # as another process would have recorded it
                conn.execute(update(run).where(run.c.id == run_id).values(writer=who))
        assert store.dead_runs() == ["before-reboot", "dead-here"]
        assert store.close_killed_runs() == ["before-reboot", "dead-here"]
        assert {r.id: r.status for r in store.runs()} == {
            "live-here": "running", "dead-here": "interrupted", "other-machine": "running",
            "before-reboot": "interrupted"}


def test_a_reading_command_sees_one_snapshot_while_a_run_is_written(pg_url):
    """Every read of one command in one REPEATABLE READ transaction: `list` and the report
    it then loads agree, however many samples were added in between."""
    case = fixture_cases()[0]
    samples = make_samples(case, random.Random(8), runs=2)
    with Store(pg_url) as writer:
        run_id = writer.begin_run(fixture_run_info())
        writer.add_sample(run_id, case, samples[0])
        with Store(pg_url, readonly=True) as reader:
            assert [r.samples for r in reader.runs()] == [1]
            writer.add_sample(run_id, case, samples[1])
            writer.finish_run(run_id, "complete")
            assert [r.samples for r in reader.runs()] == [1]
            loaded = reader.load_run(run_id)
            assert loaded.status == "running" and loaded.samples[case.key] == (samples[0],)
