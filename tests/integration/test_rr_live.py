"""The request/response workload (sockperf ping-pong over TCP) between real namespaces:
transactions per second and their round-trip percentiles in the sample."""

from offlab.plan import parse
from offlab.runner import Runner

from .runs import ListSink

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
