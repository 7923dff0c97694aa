"""The request/response workload (sockperf ping-pong over TCP) between real namespaces:
transactions per second and their round-trip percentiles in the sample."""

import pytest

from offlab.run.plan import parse
from offlab.run.runner import Runner

from .runs import ListSink

pytestmark = pytest.mark.alone  # round trips a second: a neighbour's load is fewer of them


PLAN = """
name = "rr"
runs = 1
duration = 1.0
warmup = 1.0
scenarios = ["bare"]
mtus = [1500]
traffic = ["tcp-rr"]
sequences = ["all-on"]
"""


def test_ping_pong_gives_transactions_and_round_trip_percentiles():
    plan = parse(PLAN, "rr.toml")
    sink = ListSink()
    Runner(sink, "rr", plan.settings(), show_progress=False).execute(plan.cases)
    ((case, sample),) = sink.samples
    assert case.traffic.label == "tcp-rr"
    c = sample.counters
    assert c["transactions_per_s"] > 1000 and c["rr_samples"] > 1000
    assert 0 < c["rr_p50_us"] <= c["rr_p99_us"] <= c["rr_p999_us"]
    assert sample.throughput_bps > 0 and sample.cpu


LOADED = """
name = "rrload"
runs = 1
duration = 1.5
warmup = 0.5
scenarios = ["bare"]
mtus = [1500]
traffic = ["tcp"]
sequences = ["all-on"]
latency_probe = true
[service_demand]
percent = 50
duration = 5.7
warmup = 0.3
"""


def test_latency_is_counted_inside_the_window_and_at_a_fixed_paced_load():
    """Issue 37: irtt beside the saturating stream keeps only probes sent in the measured
    window (the warm-up's are dropped); the paced stream carries a paced TCP
    request/response probe whose round trips all lie inside its window."""
    plan = parse(LOADED, "rrload.toml")
    sink = ListSink()
    Runner(sink, "rrload", plan.settings(), show_progress=False).execute(plan.cases)
    by_label = {case.traffic.label: sample for case, sample in sink.samples}
    saturated, paced = by_label["tcp"].counters, by_label["tcp-sd50"].counters
    # 2 ms probes for 0.5 s warm-up + 1.5 s: the warm-up's ~250 are outside the window.
    assert saturated["rtt_outside"] >= 150 and saturated["rtt_samples"] + saturated["rtt_lost"] <= 1.5 / 0.002 + 5
    assert "rtt_samples" not in paced and paced["rrload_rate"] == 500
    # sockperf ran 5 whole seconds inside the 5.7 s window at 500/s (less its own warm-up).
    assert 500 <= paced["rrload_samples"] <= 5 * 500 and 0 < paced["rrload_p50_us"] <= paced["rrload_p99_us"]
