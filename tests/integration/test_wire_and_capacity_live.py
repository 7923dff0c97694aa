"""Issue-14 behaviour on real namespaces: the MTU wire makes the receiver's GRO visible in
its counters, and the UDP capacity search returns a rate within its loss bound with a
higher probe above it."""

from offlab.plan import parse
from offlab.runner import Runner

from .runs import ListSink

BASE = """
name = "live"
runs = 1
duration = 1.0
warmup = 1.0
scenarios = ["bare"]
mtus = [1500]
"""


def test_on_the_mtu_wire_gro_off_means_more_packets_reach_the_receivers_stack():
    plan = parse(BASE + 'traffic = ["tcp"]\nsequences = ["rx"]\nreceiver_wire = "mtu"\n', "wire.toml")
    sink = ListSink()
    Runner(sink, "wire", plan.settings(), show_progress=False).execute(plan.cases)
    (on_case, on), (off_case, off) = sink.by_profile()["all-on"], sink.by_profile()["gro-off"]
    assert on_case.topology["wire"] == "mtu" == off_case.topology["wire"]
    for sample in (on, off):  # the wire is recorded: the sender's TSO held off, as asked
        tso = sample.offloads["tx:ofl-v0"]["tcp-segmentation-offload"]
        assert tso.on is False and tso.requested is False
    per_s = [s.counters["rx:Ip.InReceives"] / s.counters["cpu_window_s"] for s in (on, off)]
    frames = [s.counters["rx:dev.ofl-v1.rx_packets"] / s.counters["cpu_window_s"] for s in (on, off)]
    # GRO on: many MTU frames per packet up the stack; GRO off: one each.
    assert per_s[1] > 2 * per_s[0] and frames[0] > 2 * per_s[0]


def test_udp_capacity_is_within_its_bound_and_a_higher_probe_is_not():
    plan = parse(BASE + 'traffic = ["udp1472"]\nsequences = ["all-on"]\nudp_rate = "capacity"\n', "cap.toml")
    sink = ListSink()
    Runner(sink, "cap", plan.settings(), show_progress=False).execute(plan.cases)
    case, sample = sink.by_profile()["all-on"]
    probes = sample.probes
    assert case.traffic.mode == "capacity" and len(probes) >= 2
    passing = [p for p in probes if p.loss_percent <= 0.1]
    assert passing and sample.throughput_bps == max(passing, key=lambda p: p.received_bps).received_bps
    knee = max(p.offered_bps for p in passing if p.offered_bps)
    assert any(p.loss_percent > 0.1 and (p.offered_bps == 0 or p.offered_bps > knee) for p in probes)
