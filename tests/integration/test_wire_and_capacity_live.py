"""Issue-14 behaviour on real namespaces: the MTU wire makes the receiver's GRO visible in
its counters, and the UDP capacity search returns a rate within its loss bound with a
higher probe above it."""

import pytest

from offlab.measure import capacity
from offlab.run.plan import parse
from offlab.run.runner import Runner

from .runs import ListSink

pytestmark = pytest.mark.alone  # a capacity search and its pacing: a neighbour moves the ceiling


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


def test_udp_capacity_is_a_verified_trial_with_tuned_buffers_and_its_limit_has_a_cause():
    plan = parse(BASE + 'traffic = ["udp1472"]\nsequences = ["all-on"]\nudp_rate = "capacity"\n', "cap.toml")
    sink = ListSink()
    Runner(sink, "cap", plan.settings(), show_progress=False).execute(plan.cases)
    case, sample = sink.by_profile()["all-on"]
    c = sample.counters
    searched = int(c["capacity_probes"])
    search, verification = sample.probes[:searched], sample.probes[searched:]
    # A failed verification steps down and tries again, up to the module's trial count.
    assert case.traffic.mode == "capacity" and searched >= 1
    assert 1 <= len(verification) <= capacity.VERIFICATION_TRIALS
    # The sample is the last verification trial (the plan's full length), not a short probe.
    assert sample.throughput_bps == verification[-1].received_bps and sample.duration_s >= 0.9
    if c["capacity_verified"] == 1.0:
        assert sample.loss_percent <= 0.1
    if c["capacity_sender_bound"] == 0.0:  # some probe failed: what bounded it is named
        assert c["limit_loss_lost"] > 0 and any(k.startswith("limit_loss_") and k != "limit_loss_lost"
                                                for k in c)
        # How busy both endpoints' cores were at the limit (/proc/stat of this machine).
        for role in ("sender", "receiver"):
            assert 0 <= c[f"limit_{role}_core_soft_pct"] <= c[f"limit_{role}_core_pct"] + 1e-6 <= 100 + 1e-6
    # The kernel granted the tuned buffer: twice the request, capped by the namespace's limit.
    with open("/proc/sys/net/core/rmem_max") as limit:
        allowed = min(4 * 1024 * 1024, int(limit.read()))
    assert c["receiver_rcvbuf_bytes"] >= 2 * allowed


def test_in_a_transmitter_sequence_with_tso_on_the_receiver_gets_mtu_frames():
    # Issue 37: on veth's own wire the receiver got ~54 KB per packet with the sender's
    # TSO on. The transmitter sequence now runs on the "nic" wire: the sender still
    # hands its device super-packets (TSO on, as asked), the receiver's device gets
    # MTU frames, as from a NIC pair. The kernel's own device counters are the oracle.
    plan = parse(BASE + 'traffic = ["tcp"]\nsequences = ["tx-all-off"]\n', "txwire.toml")
    sink = ListSink()
    Runner(sink, "txwire", plan.settings(), show_progress=False).execute(plan.cases)
    case, sample = sink.by_profile()["all-on"]
    assert case.topology["wire"] == "nic"
    assert sample.offloads["tx:ofl-v0"]["tcp-segmentation-offload"].on is True
    c = sample.counters
    sent = c["tx:dev.ofl-v0.tx_bytes"] / c["tx:dev.ofl-v0.tx_packets"]
    received = c["rx:dev.ofl-v1.rx_bytes"] / c["rx:dev.ofl-v1.rx_packets"]
    assert sent > 1514  # super-packets leave the sender: its TSO is on
    assert received <= 1500 + 14  # MTU frames (IP MTU + Ethernet header) reach the receiver
    # the same over the measured window alone, as the report's packets/s columns read it
    window = c["window:rx:dev.ofl-v1.rx_bytes"] / c["window:rx:dev.ofl-v1.rx_packets"]
    assert window <= 1500 + 14
    # The old wiring, kept as a variant named for what it is, fails the same check.
    veth = parse(BASE + 'traffic = ["tcp"]\nsequences = ["all-on"]\ntransmitter_wire = "veth-superpackets"\n',
                 "veth.toml")
    sink = ListSink()
    Runner(sink, "veth", veth.settings(), show_progress=False).execute(veth.cases)
    case, sample = sink.by_profile()["all-on"]
    c = sample.counters
    assert case.topology["wire"] == "veth-superpackets"
    assert c["rx:dev.ofl-v1.rx_bytes"] / c["rx:dev.ofl-v1.rx_packets"] > 4 * 1514


def test_the_verification_trial_is_paced_never_above_the_highest_passing_probe():
    """Issue 37: a sender-bound search used to verify unpaced, and a sender that ran faster
    that time "verified" a rate no probe had passed. Every verification trial now offers a
    paced rate at or below the highest rate a passing probe offered, and the capacity is
    what that paced trial delivered."""
    plan = parse(BASE + 'traffic = ["udp1472-plain"]\nsequences = ["all-on"]\nudp_rate = "capacity"\n',
                 "paced.toml")
    sink = ListSink()
    Runner(sink, "paced", plan.settings(), show_progress=False).execute(plan.cases)
    _, sample = sink.by_profile()["all-on"]
    c = sample.counters
    searched = int(c["capacity_probes"])
    search, verification = sample.probes[:searched], sample.probes[searched:]
    passing = [p.offered_bps or p.sent_bps for p in search if p.loss_percent <= 0.1]
    assert passing and c["capacity_ceiling_bps"] == max(passing)
    for trial in verification:
        assert 0 < trial.offered_bps <= c["capacity_ceiling_bps"]
    assert c["capacity_offered_bps"] == verification[-1].offered_bps
    # The sender keeps to its pace: over its whole life (warm-up and window) it never got
    # ahead of the schedule, by more than one call's datagrams. The measured window alone
    # may hold more than its share, legitimately: a sender woken late in the warm-up
    # catches up inside the window (3 % over the pace seen on a loaded machine), so the
    # bound is on the whole life, which lateness only lowers.
    offered = verification[-1].offered_bps
    schedule = offered * (1.0 + 1.0) / (8 * 1472)  # BASE's warm-up + duration, 1472 B payloads
    assert 0 < c["udpload_sent_datagrams"] <= schedule + 2  # one send call's datagram, and rounding
    assert verification[-1].sent_bps <= 1.5 * offered  # and no unpaced burst in the window
    assert sample.throughput_bps <= verification[-1].sent_bps and c["capacity_monotone"] in (0.0, 1.0)
