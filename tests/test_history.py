"""`offlab history`: a case across runs on a new kernel, a new NIC firmware and a new
offlab, each change named beside the figures it came with, and only changes that
`compare`'s statistics call significant marked."""

from __future__ import annotations

import random
import subprocess
import sys
from dataclasses import replace

import pytest

from fixtures.make_store import fixture_cases, fixture_run_info, make_samples
from offlab.report.history import build_history, matches, what_changed
from offlab.report.history_report import history_table, render_markdown
from offlab.report.model import build_rows
from offlab.store.tables import sample
from offlab.store.store import RunAggregates, RunResults, Store
from hangguard import HANG_S

OFFLAB = [sys.executable, "-c", "from offlab.entry import main; main()"]
NIC = {"nic driver": "ice", "nic version": "6.12", "nic firmware-version": "4.20"}


def _fleet_run(store: Store, run_id: str, day: int, scale: float, seed: int, **changes) -> None:
    """One run of the fixture plan, `scale` times as fast, its environment changed."""
    facts = {"sender": dict(NIC, **changes.pop("sender", {})), "receiver": dict(NIC)}
    info = replace(fixture_run_info(), run_id=run_id, started_at=1.79e9 + day * 86400, host_facts=facts,
                   **changes)
    store.begin_run(info)
    rng = random.Random(seed)
    for case in fixture_cases():
        for sample in make_samples(case, rng, runs=5):
            store.add_sample(run_id, case, replace(sample, throughput_bps=sample.throughput_bps * scale))
    store.finish_run(run_id, "complete", finished_at=info.started_at + 600)


def _store(where) -> None:
    new_kernel, new_firmware = {"kernel": "6.19.0-fixture"}, {"sender": {"nic firmware-version": "4.40"}}
    new_offlab = {"tool_versions": {"iperf3": "3.12", "ethtool": "6.1", "offlab": "0.2.0"}}
    with Store(where) as store:
        _fleet_run(store, "day1", 1, 1.0, 1)
        _fleet_run(store, "day2", 2, 1.0, 2, **new_kernel)  # same speed
        _fleet_run(store, "day3", 3, 1.4, 3, **new_kernel, **new_firmware)  # faster
        _fleet_run(store, "day4", 4, 1.4, 4, **new_kernel, **new_firmware, **new_offlab)


def test_a_case_across_kernels_firmware_and_offlab_versions(store_at):
    _store(store_at)
    key = fixture_cases()[1].key
    with Store(store_at, readonly=True) as store:
        runs = [store.load_run(r) for r in store.run_ids()]
    (case,) = build_history(runs, key)
    assert [p.run.run_id for p in case.points] == ["day1", "day2", "day3", "day4"]
    first, kernel, firmware, offlab = case.points
    assert first.change is None and first.changed == ()
    assert kernel.changed == ("kernel: 6.18.0-fixture → 6.19.0-fixture",)
    assert firmware.changed == ("sender nic firmware-version: 4.20 → 4.40",)
    assert offlab.changed == ("offlab: – → 0.2.0",)
    assert [p.significant for p in case.points] == [False, False, True, False]
    assert 0.3 < firmware.change.ratio < 0.5
    assert case.points[0].effect is not None  # the case is not its group's baseline
    rows = history_table(case).rows
    assert rows[2][4].endswith("*") and rows[1][4].endswith("(n.s.)")
    assert rows[2][-1] == "sender nic firmware-version: 4.20 → 4.40"


def test_the_database_moments_are_the_samples_own(store_at):
    # a history takes each case's n, mean, spread and minimum of throughput and headline
    # CPU from the database (a GROUP BY); they are what report/model.py computes from the
    # samples, on both engines (SQLite's stddev_samp is storage/location.py's)
    _store(store_at)
    with Store(store_at, readonly=True) as store:
        aggregated = list(store.runs_with_cases(lambda key: True))
        whole = {r: build_rows(store.load_run(r)) for r in store.run_ids()}
    assert [type(a) for a in aggregated] == [RunAggregates] * 4
    compared = 0
    for run in aggregated:
        rows = whole[run.info.run_id]
        assert set(run.moments) == set(rows)
        for key, moments in run.moments.items():
            row = rows[key]
            assert row.cpu_per_gbps is not None and moments.cpu_per_gbps is not None
            for got, want in ((moments.throughput, row.throughput), (moments.cpu_per_gbps, row.cpu_per_gbps)):
                assert (got.n, got.positive) == (want.n, want.moments.positive)
                assert got.mean == pytest.approx(want.mean, rel=1e-12)
                assert got.std == pytest.approx(want.std, rel=1e-9)
                compared += 1
    assert compared == 2 * sum(len(rows) for rows in whole.values()) > 0


def _history_of(store_at, pattern: str, from_samples: bool) -> str:
    return render_markdown(_cases_of(store_at, pattern, from_samples), pattern, "the store")


def _cases_of(store_at, pattern: str, from_samples: bool):
    with Store(store_at, readonly=True) as store:
        runs = ([store.load_run(r) for r in store.run_ids()] if from_samples
                else list(store.runs_with_cases(lambda key: matches(pattern, key))))
    return build_history(runs, pattern)


def test_a_history_from_the_databases_moments_is_the_one_from_samples(store_at):
    _store(store_at)
    assert _history_of(store_at, "tcp", from_samples=False) == _history_of(store_at, "tcp", from_samples=True)
    # and so are the chart's intervals
    for moments, samples in zip(_cases_of(store_at, "tcp", False), _cases_of(store_at, "tcp", True)):
        assert [p.interval for p in moments.points] == [pytest.approx(p.interval, rel=1e-12) for p in samples.points]
        assert all(p.interval is not None for p in moments.points)


def test_samples_stored_without_their_headline_are_read_whole(store_at):
    # samples an offlab before revision 0005 stored have no headline CPU: the history
    # reads those runs' samples, and prints the same
    _store(store_at)
    expected = _history_of(store_at, "tcp", from_samples=True)
    with Store(store_at) as store, store._engine.begin() as conn:
        conn.execute(sample.update().where(sample.c.run_id == "day2").values(cpu_timed=None, cpu_per_gbps=None))
    with Store(store_at, readonly=True) as store:
        kinds = {r.info.run_id: type(r) for r in store.runs_with_cases(lambda key: True)}
    assert kinds == {"day1": RunAggregates, "day2": RunResults, "day3": RunAggregates, "day4": RunAggregates}
    assert _history_of(store_at, "tcp", from_samples=False) == expected


def test_patterns():
    assert matches("bare/*/tcp", "bare/mtu1500/tx:tso-off/tcp")
    assert not matches("vxlan/*", "bare/mtu1500/tx:tso-off/tcp")
    assert matches("tso-off", "bare/mtu1500/tx:tso-off/tcp")


def test_nothing_changed_is_no_change():
    assert what_changed(fixture_run_info(), fixture_run_info()) == ()


def test_the_history_command(tmp_path, pg_url):
    _store(pg_url)
    done = subprocess.run([*OFFLAB, "history", "tcp", "--store", pg_url, "--out", str(tmp_path / "h")],
                          capture_output=True, text=True, timeout=HANG_S)
    assert done.returncode == 0, done.stderr
    assert "sender nic firmware-version: 4.20 → 4.40" in done.stdout
    md = (tmp_path / "h" / "history.md").read_text()
    assert md.startswith("# offlab history: tcp") and "## " in md
    assert "<img" in (tmp_path / "h" / "history.html").read_text()
    none = subprocess.run([*OFFLAB, "history", "nosuchcase", "--store", pg_url], capture_output=True,
                          text=True, timeout=HANG_S, cwd=tmp_path)
    assert none.returncode == 1 and none.stderr.count("\n") == 1 and "no stored case matches" in none.stderr


def test_a_history_loads_nothing_of_the_measuring_side():
    # pyroute2 and the measuring modules were ~0.35 s of a history's start: the report
    # read two device names and a counter prefix through topology.bare and measure.
    import subprocess
    import sys
    code = ("import sys, offlab.report.history, offlab.report.history_report; "
            "print(sorted(m for m in ('pyroute2', 'offlab.measure.measure', 'offlab.topology') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
