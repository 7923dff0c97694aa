"""/proc/stat parsing and per-core deltas, on snapshots recorded on this machine."""

from pathlib import Path

import pytest

from offlab.measure.cpu import ProcStatError, parse_proc_stat, shares_between
from offlab.records import CPU_CLASSES

FIXTURES = Path(__file__).parent / "fixtures"


def recorded(name: str):
    return parse_proc_stat((FIXTURES / name).read_text())


def test_parses_every_core_and_maps_columns_by_position():
    times = parse_proc_stat("cpu  9 9 9 9 9 9 9 9 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\nintr 5 6\n")
    assert times.ticks == {0: {"usr": 1, "nice": 2, "sys": 3, "idle": 4, "iowait": 5,
                               "irq": 6, "soft": 7, "steal": 8}}


def test_recorded_snapshot_has_both_cores():
    assert sorted(recorded("proc-stat-before.txt").ticks) == [0, 1]


def test_recorded_delta_sums_to_100_percent_per_core():
    shares = shares_between(recorded("proc-stat-before.txt"), recorded("proc-stat-after.txt"))
    assert [s.core for s in shares] == [0, 1]
    for share in shares:
        assert set(share.percent) == set(CPU_CLASSES)
        assert sum(share.percent.values()) == pytest.approx(100.0)
        assert 0.0 <= share.busy <= 100.0


def test_delta_is_the_share_of_elapsed_ticks():
    before = parse_proc_stat("cpu0 100 0 100 100 0 0 0 0\n")
    after = parse_proc_stat("cpu0 130 0 150 120 0 0 0 0\n")
    (share,) = shares_between(before, after)
    assert share.percent["usr"] == pytest.approx(30.0)
    assert share.percent["sys"] == pytest.approx(50.0)
    assert share.percent["idle"] == pytest.approx(20.0)
    assert share.busy == pytest.approx(80.0)


def test_counter_going_backwards_counts_as_zero():
    before = parse_proc_stat("cpu0 0 0 0 0 50 0 0 0\n")
    after = parse_proc_stat("cpu0 10 0 0 10 40 0 0 0\n")
    (share,) = shares_between(before, after)
    assert share.percent["iowait"] == 0.0
    assert sum(share.percent.values()) == pytest.approx(100.0)


@pytest.mark.parametrize("text, reason", [
    ("", "no cpu<N> lines"),
    ("cpu0 1 2 3\n", "columns"),
    ("cpu0 1 2 3 4 5 x 7 8\n", "non-numeric"),
    ("cpuX 1 2 3 4 5 6 7 8\n", "is not cpu<N>"),
])
def test_malformed_input_has_a_reason(text, reason):
    with pytest.raises(ProcStatError, match=reason):
        parse_proc_stat(text)


def test_no_elapsed_ticks_is_an_error():
    snap = parse_proc_stat("cpu0 1 2 3 4 5 6 7 8\n")
    with pytest.raises(ProcStatError, match="no ticks"):
        shares_between(snap, snap)


def test_different_core_sets_are_an_error():
    with pytest.raises(ProcStatError, match="different cores"):
        shares_between(parse_proc_stat("cpu0 1 1 1 1 1 1 1 1\n"),
                       parse_proc_stat("cpu0 2 2 2 2 2 2 2 2\ncpu1 2 2 2 2 2 2 2 2\n"))


def test_pid_stat_with_spaces_and_parentheses_in_the_name():
    from offlab.hosts.proctimes import parse_pid_stat
    line = "4242 (iperf3 (x) y) S 1 4242 4242 0 -1 4194560 100 0 0 0 17 230 0 0 20 0 1 0 5 0 0\n"
    times = parse_pid_stat(line)
    assert (times.usr, times.sys) == (17, 230)
    with pytest.raises(ProcStatError):
        parse_pid_stat("garbage")


def test_process_percent_is_of_one_core():
    from offlab.hosts.proctimes import CLK_TCK, ProcessTimes, process_percent
    got = process_percent(ProcessTimes(0, 0), ProcessTimes(CLK_TCK // 2, CLK_TCK), 2.0)
    assert got == pytest.approx({"usr": 25.0, "sys": 50.0})
    assert process_percent(None, ProcessTimes(1, 1), 1.0) is None


def test_own_process_times_are_readable():
    import os
    from offlab.hosts.proctimes import process_times
    assert process_times(os.getpid()) is not None


# --- the window's own clock, steal apart, per-task nanoseconds ----------------------------

def _clocked(text: str, uptime: float):
    from dataclasses import replace
    return replace(parse_proc_stat(text), uptime_s=uptime)


def test_a_paced_run_that_sleeps_across_ticks_reads_busy_from_the_measured_idle():
    # Recorded on this 2-core VM (tick accounting, tickless idle): over a 0.7 s window
    # the core's idle advanced 52 (measured, 10 ms units) while only 1 busy tick was
    # sampled. Normalised by the ticks' sum the core read 98 % idle; by the window's
    # clock it was 26 % busy, as the task's own clock said.
    before = _clocked("cpu0 1000 0 500 9000 10 0 20 3\n", 100.00)
    after = _clocked("cpu0 1000 0 501 9052 10 0 20 3\n", 100.70)
    (share,) = shares_between(before, after)
    assert share.busy == pytest.approx(100 - 100 * 52 / 70)
    assert share.percent["sys"] == pytest.approx(share.busy)
    assert sum(share.percent.values()) == pytest.approx(100.0)


def test_steal_is_shown_apart_and_never_busy():
    before = _clocked("cpu0 0 0 0 0 0 0 0 0\n", 10.0)
    after = _clocked("cpu0 30 0 10 40 0 0 0 20\n", 11.0)
    (share,) = shares_between(before, after)
    assert share.percent["steal"] == pytest.approx(20.0)
    assert share.busy == pytest.approx(40.0)
    assert share.percent["usr"] == pytest.approx(30.0) and share.percent["sys"] == pytest.approx(10.0)


def test_busy_split_error_shrinks_with_the_window():
    from offlab.measure.cpu import busy_split_error
    short = busy_split_error(20.0, 50.0, 0.7, 250)
    long = busy_split_error(20.0, 50.0, 5.0, 250)
    assert long < short and long == pytest.approx(50.0 * (0.4 * 0.6 / (0.5 * 5.0 * 250)) ** 0.5)


def test_schedstat_first_field_is_nanoseconds_on_cpu():
    from offlab.measure.cpu import ProcStatError as Bad, parse_schedstat
    assert parse_schedstat("123456789 4000 17\n") == 123456789
    with pytest.raises(Bad, match="schedstat"):
        parse_schedstat("x y\n")


def test_this_process_task_clock_moves_in_nanoseconds():
    import os
    from offlab.measure.cpu import task_ns
    first = task_ns(os.getpid())
    sum(i * i for i in range(200000))
    second = task_ns(os.getpid())
    assert first is not None and second is not None and second > first


def test_a_role_whose_tasks_used_more_than_its_core_had_is_refused():
    from offlab.measure.cpu import refused_roles, refusals
    # Recorded: the receiver's iperf3 and its NAPI thread read 134 % of the one core
    # they were pinned to (a pinning that did not hold).
    refused = refused_roles({"sender": 71.0, "receiver": 134.0}, {"sender": 1, "receiver": 1})
    assert refused == {"receiver": 134.0}
    assert refusals({"cpu_refused.receiver": 134.0, "role_tasks_pct.sender": 71.0}) == {"receiver": 134.0}
    assert refused_roles({"receiver": 101.5}, {"receiver": 1}) == {}  # within the read skew


def test_role_tasks_sum_what_is_pinned_to_the_roles_core_and_refuse_beyond_it():
    from types import SimpleNamespace as NS
    from offlab.measure.measure import _task_counters
    local = NS(machine="local")
    topo = NS(sender=NS(host=local, core=0), receiver=NS(host=local, core=1),
              roles={"sender": 0, "receiver": 1})
    # Recorded over a 5 s window: the client 3.1 s on CPU, the server 2.9 s and the
    # receiver's NAPI thread 2.6 s — 110 % of the receiver's one core: refused.
    before = {"sender_app": 10_000_000_000, "receiver_app": 20_000_000_000, "napi_core1": 1_000_000_000}
    after = {"sender_app": 13_100_000_000, "receiver_app": 22_900_000_000, "napi_core1": 3_600_000_000}
    counters = _task_counters(topo, before, after, 5.0)
    assert counters["sender_app_ns_pct"] == pytest.approx(62.0)
    assert counters["role_tasks_pct.receiver"] == pytest.approx(58.0 + 52.0)
    assert counters["cpu_refused.receiver"] == pytest.approx(110.0)
    assert "cpu_refused.sender" not in counters
    assert counters["tasks_pct_total"] == pytest.approx(62.0 + 58.0 + 52.0)
