"""offlab-udpload between real namespaces: with UDP_SEGMENT the sender hands the kernel
44 datagrams of 1472 B per send and, with UDP_GRO, the kernel hands the sink coalesced
runs of them (the kernel's UDP_GRO control message is the oracle); plain sends one at a
time. Both sinks read with recvmmsg. And UDP request/response (sockperf ping-pong over UDP)."""

import pytest

from offlab.measure import rtthist
from offlab.run.plan import parse
from offlab.run.runner import Runner

from .runs import ListSink

pytestmark = pytest.mark.alone  # coalesced reads and the wire's frame sizes under a set rate


BASE = """
name = "udpload"
runs = 1
duration = 0.5
warmup = 0.5
scenarios = ["bare"]
mtus = [1500]
sequences = ["all-on"]
"""


def test_gso_sends_many_datagrams_per_call_and_gro_reads_them_coalesced():
    plan = parse(BASE + 'traffic = ["udp1472-plain", "udp1472-gso"]\nudp_rate = "300M"\n', "u.toml")
    sink = ListSink()
    Runner(sink, "udpload", plan.settings(), show_progress=False).execute(plan.cases)
    by_label = {case.traffic.label: sample for case, sample in sink.samples}
    plain, gso = by_label["udp1472-plain-300M"], by_label["udp1472-gso-300M"]
    assert plain.counters["udpload_segments_per_send"] == 1 == plain.counters["udpload_datagrams_per_read"]
    assert gso.counters["udpload_segments_per_send"] == 44  # 65507 // 1472
    assert gso.counters["udpload_datagrams_per_read"] > 1 and gso.counters["udpload_coalesced_read_share"] > 0
    for sample in (plain, gso):
        assert sample.total_packets > 0 and 0 <= sample.lost_packets <= sample.total_packets
        assert 0 < sample.throughput_bps <= sample.sender_bps * 1.0001
        assert sample.counters["receiver_rcvbuf_bytes"] == 2 * 4 * 1024 * 1024  # SO_RCVBUFFORCE
        assert 1 <= sample.counters["udpload_reads_per_call"] <= 64  # recvmmsg's batch


def test_udp_request_response_keeps_every_round_trip():
    plan = parse(BASE + 'traffic = ["udp-rr"]\n', "rr.toml")
    sink = ListSink()
    Runner(sink, "udprr", plan.settings(), show_progress=False).execute(plan.cases)
    ((case, sample),) = sink.samples
    c = sample.counters
    # Round trips happened and were counted; how many a second is the machine's speed,
    # which a test never asserts (253 a second were seen with both cores busy).
    assert case.traffic.label == "udp-rr" and c["transactions_per_s"] > 0 and c["rr_samples"] > 0
    # The full log holds every round trip sockperf counted (and a few around its window).
    logged = sum(rtthist.from_counters(c, "rr").values())
    assert c["rr_samples"] <= logged <= 1.01 * c["rr_samples"] + 100
