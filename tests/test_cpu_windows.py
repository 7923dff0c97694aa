"""CPU windows by each machine's own clock, judged against the measured window; iperf3's
own CPU figures kept as a cross-check (issue #30, item 3)."""

import json

import pytest

from offlab.measure import cpu
from offlab.records import CaseSpec, CpuShare, OffloadProfile, RunInfo, Sample, TrafficSpec
from offlab.report.checks import find_warnings
from offlab.report.model import Thresholds, profile_row
from offlab.report.windows import window_sections
from offlab.store.store import RunResults
from offlab.warnings import CpuWindowOff


def test_window_is_the_ticks_every_core_accounted():
    before = cpu.parse_proc_stat("cpu0 100 0 100 100 0 0 0 0\ncpu1 0 0 0 50 0 0 0 0\n")
    after = cpu.parse_proc_stat("cpu0 130 0 150 170 0 0 0 0\ncpu1 0 0 10 190 0 0 0 0\n")
    # core 0: 150 ticks, core 1: 150 ticks → 1.5 s at USER_HZ 100
    assert cpu.window_seconds(before, after) == pytest.approx(1.5)


def test_windows_off_by_more_than_five_percent_are_named():
    counters = {cpu.NOMINAL: 1.5, "cpu_window_s.tx": 1.52, "cpu_window_s.rx": 1.2}
    assert cpu.windows_off(counters, 1.5) == {"rx": 1.2}
    assert cpu.windows_off(counters, 1.3) == {"rx": 1.2, "iperf3": 1.3}
    assert cpu.windows_off({"cpu_window_s.rx": 0.1}, 1.5) == {}  # no nominal: not judged


def test_iperf3_cpu_utilization_is_read_from_its_json():
    text = json.dumps({"end": {"cpu_utilization_percent": {"host_total": 97.5, "host_user": 1.0,
                                                            "remote_total": 41.0}}})
    assert cpu.parse_iperf3_cpu(text) == {"iperf3_cpu_sender_pct": 97.5, "iperf3_cpu_receiver_pct": 41.0}
    assert cpu.parse_iperf3_cpu("{}") == {} and cpu.parse_iperf3_cpu("not json") == {}


def _row(windows):
    case = CaseSpec("bare", 1500, OffloadProfile("all-on", "both", {}), TrafficSpec("tcp", 1.5))
    samples = tuple(
        Sample(case.key, i, 0.0, 1.5, 10e9, 10e9, cpu=(CpuShare(0, {"sys": 40.0 + 10 * i, "idle": 60.0 - 10 * i}),),
               roles={"sender": 0}, counters={cpu.NOMINAL: 1.5, "cpu_window_s.tx": 1.5, "cpu_window_s.rx": rx,
                                              "sender_app_usr_pct": 1.0, "sender_app_sys_pct": 90.0,
                                              "iperf3_cpu_sender_pct": 88.0})
        for i, rx in enumerate(windows))
    return profile_row(case, samples)


def test_a_sample_with_a_short_window_is_left_out_of_cpu_figures_with_a_warning():
    row = _row([1.5, 1.49, 1.15])
    assert row.cpu_total.n == 2 and row.cpu_total.values == (40.0, 50.0)
    assert row.throughput.n == 3  # throughput keeps every sample
    (warning,) = [w for w in find_warnings_of(row) if isinstance(w, CpuWindowOff)]
    assert (warning.where, warning.samples, warning.of, warning.seconds) == ("rx", 1, 3, 1.15)
    (section,) = window_sections([row])
    (_, table), = section.tables
    assert table.rows[0][4] == "1 of 3" and table.rows[0][5] == "91±0 / 88±0"
    assert "rx 1.38±0.20" in table.rows[0][2]


def test_no_sample_in_its_window_means_no_cpu_figure():
    row = _row([1.0, 1.1, 1.2])
    assert row.cpu_total is None and row.cpu_per_gbps is None and row.roles == ()


def find_warnings_of(row):
    info = RunInfo("r1", "quick", 0.0, "offlab run", "6.18", "cpu", 2)
    results = RunResults(info, "complete", (row.case,), {row.case.key: row.samples})
    return find_warnings(results, {row.case.key: row}, (), Thresholds())


def test_the_hosts_own_clock_is_read_with_its_ticks_in_one_command():
    from tests.fixtures.recording_host import RecordingHost

    stat = "cpu  1 1 1 1 1 1 1 1\ncpu0 100 0 100 100 0 0 0 0\n"
    host = RecordingHost("rx", lambda args: "8123.45 16000.00\n" + stat)
    found = cpu.snapshot(host)
    assert host.calls == [["cat", "/proc/uptime", "/proc/stat"]]
    assert found.uptime_s == 8123.45 and found.ticks[0]["usr"] == 100
    later = cpu.CpuTimes(found.ticks, 8124.16)
    # the clock wins over the ticks (which did not move here at all)
    assert cpu.window_seconds(found, later) == pytest.approx(0.71)
    assert cpu.parse_uptime("") is None


def test_this_machine_is_read_directly_with_its_clock():
    found = cpu.snapshot()
    assert found.uptime_s is not None and found.uptime_s > 0 and found.ticks
