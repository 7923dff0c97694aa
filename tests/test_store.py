"""The SQLite results store: round trip, commit per sample, versions, counts."""

import random
import sqlite3
from dataclasses import replace

import pytest

from fixtures.make_store import fixture_cases, fixture_run_info, make_samples
from offlab.records import RESULTS_FORMAT_VERSION, CpuShare, Sample
from offlab.store import Store, StoreError


def test_round_trip_rebuilds_identical_records(tmp_path):
    path = tmp_path / "deep" / "dir" / "results.sqlite"
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


def test_optional_fields_and_core_order_survive(tmp_path):
    case = fixture_cases()[0]
    sample = Sample(case_key=case.key, repetition=0, started_at=1.5, duration_s=2.0,
                    throughput_bps=1e9, sender_bps=1e9,
                    cpu=(CpuShare(3, {"idle": 100.0}), CpuShare(1, {"usr": 50.0, "idle": 50.0})),
                    counters={"n": 7, "x": 0.25})
    with Store(tmp_path / "r.sqlite") as store:
        run_id = store.begin_run(fixture_run_info())
        store.add_sample(run_id, case, sample)
        (loaded,) = store.load_run(run_id).samples[case.key]
    assert loaded == sample
    assert [c.core for c in loaded.cpu] == [3, 1]
    assert loaded.retransmits is None and loaded.loss_percent is None


def test_each_sample_is_visible_to_another_reader_before_the_run_ends(tmp_path):
    path = tmp_path / "r.sqlite"
    case = fixture_cases()[0]
    samples = make_samples(case, random.Random(2), runs=2)
    writer = Store(path)
    run_id = writer.begin_run(fixture_run_info())
    writer.add_sample(run_id, case, samples[0])
    reader = sqlite3.connect(path)
    assert reader.execute("SELECT COUNT(*) FROM sample").fetchone() == (1,)
    writer.add_sample(run_id, case, samples[1])
    assert reader.execute("SELECT COUNT(*) FROM sample").fetchone() == (2,)
    assert reader.execute("SELECT status FROM run").fetchone() == ("running",)
    assert reader.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    reader.close()
    writer.close()


def test_add_case_is_idempotent_and_keeps_plan_order(tmp_path):
    cases = fixture_cases()[:3]
    with Store(tmp_path / "r.sqlite") as store:
        run_id = store.begin_run(fixture_run_info())
        for case in cases + cases[::-1]:
            store.add_case(run_id, case)
        results = store.load_run(run_id)
        assert results.cases == tuple(cases)
        assert all(results.samples[c.key] == () for c in cases)


def test_completed_counts(tmp_path):
    cases = fixture_cases()[:3]
    rng = random.Random(3)
    with Store(tmp_path / "r.sqlite") as store:
        run_id = store.begin_run(fixture_run_info())
        for case in cases:
            store.add_case(run_id, case)
        for sample in make_samples(cases[1], rng, runs=2):
            store.add_sample(run_id, cases[1], sample)
        assert store.completed_counts(run_id) == {cases[0].key: 0, cases[1].key: 2,
                                                  cases[2].key: 0}


def test_runs_and_latest(tmp_path):
    with Store(tmp_path / "r.sqlite") as store:
        assert store.runs() == [] and store.latest_run_id() is None
        first = store.begin_run(fixture_run_info())
        second = store.begin_run(replace(fixture_run_info(), run_id="b", started_at=2e9))
        store.add_case(second, fixture_cases()[0])
        store.finish_run(first, "interrupted")
        summaries = store.runs()
        assert [(r.id, r.status, r.cases, r.samples) for r in summaries] == [
            (first, "interrupted", 0, 0), ("b", "running", 1, 0)]
        assert store.latest_run_id() == "b"


def test_errors_are_typed(tmp_path):
    with Store(tmp_path / "r.sqlite") as store:
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


def test_newer_format_is_refused_with_one_line(tmp_path):
    path = tmp_path / "r.sqlite"
    Store(path).close()
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'format_version'",
                     (str(RESULTS_FORMAT_VERSION + 1),))
    conn.close()
    with pytest.raises(StoreError) as err:
        Store(path)
    assert "newer" in str(err.value) and "\n" not in str(err.value)


def test_format_version_is_recorded(tmp_path):
    path = tmp_path / "r.sqlite"
    Store(path).close()
    conn = sqlite3.connect(path)
    row = conn.execute("SELECT value FROM meta WHERE key = 'format_version'").fetchone()
    conn.close()
    assert row == (str(RESULTS_FORMAT_VERSION),)


def test_older_format_is_upgraded_in_place(tmp_path, monkeypatch):
    # Pretend the current format is one newer than what is on disk, with one step.
    import offlab.store as store_module

    path = tmp_path / "r.sqlite"
    with Store(path) as store:
        store.begin_run(fixture_run_info())
    steps = []

    def step(conn):
        steps.append(1)
        conn.execute("ALTER TABLE run ADD COLUMN upgraded INTEGER DEFAULT 1")

    monkeypatch.setattr(store_module, "RESULTS_FORMAT_VERSION", RESULTS_FORMAT_VERSION + 1)
    monkeypatch.setitem(store_module.MIGRATIONS, RESULTS_FORMAT_VERSION, step)
    with Store(path) as store:
        assert store.load_run(fixture_run_info().run_id).info == fixture_run_info()
    Store(path).close()  # already upgraded: the step does not run again
    assert steps == [1]
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT value FROM meta WHERE key='format_version'").fetchone() == (
        str(RESULTS_FORMAT_VERSION + 1),)
    assert conn.execute("SELECT upgraded FROM run").fetchone() == (1,)
    conn.close()


def test_a_repetition_cannot_be_stored_twice(tmp_path):
    case = fixture_cases()[0]
    sample = make_samples(case, random.Random(5), runs=1)[0]
    with Store(tmp_path / "r.sqlite") as store:
        run_id = store.begin_run(fixture_run_info())
        store.add_sample(run_id, case, sample)
        with pytest.raises(StoreError, match="already stored"):
            store.add_sample(run_id, case, sample)
        assert store.completed_counts(run_id) == {case.key: 1}


def test_intervals_probes_and_datapath_state_round_trip(tmp_path):
    from dataclasses import replace

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
    with Store(tmp_path / "r.sqlite") as store:
        store.begin_run(replace(fixture_run_info(), run_id="x"))
        store.add_sample("x", case, sample)
        loaded = store.load_run("x")
    assert loaded.cases == (case,) and loaded.samples[case.key] == (sample,)
