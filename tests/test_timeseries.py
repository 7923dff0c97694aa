"""Time series in the report: stalls found from the intervals, and a chart drawn per
group that has them."""

from offlab.records import CaseSpec, Interval, OffloadProfile, Sample, TrafficSpec
from offlab.report.model import build_groups, build_rows
from offlab.report.timeseries import has_series, series_chart, stalls
from offlab.store.store import RunResults
from tests.fixtures.make_store import fixture_run_info

CASE = CaseSpec("bare", 1500, OffloadProfile("all-on", "both", {}), TrafficSpec("tcp", 2.0, 0.5))


def _sample(rep: int, rates: list[float]) -> Sample:
    intervals = tuple(Interval(0.1 * n, 0.1 * (n + 1), r, warmup=n < 5) for n, r in enumerate(rates))
    return Sample(CASE.key, rep, 0.0, 2.0, 10e9, 10e9, intervals=intervals)


def test_a_stall_is_an_interval_under_a_tenth_of_the_median():
    steady = _sample(0, [0.0] * 5 + [10e9] * 20)  # a slow warm-up is not a stall
    stalled = _sample(1, [0.0] * 5 + [10e9] * 8 + [0.2e9] * 3 + [10e9] * 9)
    found = list(stalls(CASE.key, [steady, stalled]))
    assert len(found) == 1
    assert (found[0].repetition, found[0].intervals) == (1, 3)
    assert abs(found[0].seconds - 0.3) < 1e-9 and found[0].median_bps == 10e9


def test_series_chart_for_a_group_with_intervals():
    samples = (_sample(0, [5e9] * 25), _sample(1, [6e9] * 25))
    results = RunResults(fixture_run_info(), "complete", (CASE,), {CASE.key: samples})
    (group,) = build_groups(results, build_rows(results))
    assert has_series(group)
    assert series_chart(group)[:8] == b"\x89PNG\r\n\x1a\n"


def test_iperf3s_trailing_partial_interval_is_no_stall():
    """iperf3 ends with what is left of its last interval: 7 ms carrying a few packets.
    Its rate is far under the median, but it is no stall (the old detector flagged it)."""
    full = [Interval(0.1 * n, 0.1 * (n + 1), 10e9, warmup=n < 5) for n in range(25)]
    tail = Interval(2.5, 2.507, 0.3e9)
    samples = [Sample(CASE.key, rep, 0.0, 2.5, 10e9, 10e9, intervals=(*full, tail)) for rep in range(3)]
    assert list(stalls(CASE.key, samples)) == []
    # A short interval anywhere but last, or a full-length slow last one, still is one.
    slow_last = Interval(2.5, 2.6, 0.3e9)
    found = list(stalls(CASE.key, [Sample(CASE.key, 0, 0.0, 2.6, 10e9, 10e9, intervals=(*full, slow_last))]))
    assert [(s.repetition, s.intervals) for s in found] == [(0, 1)]
