"""On the NIC wire the wire's bridging and segmenting (a NIC's hardware work) run on the
receiver's core, so the headline CPU per Gbit/s of a transmitter effect is the sender's
core; every core's figure, the wire's work in it, is shown apart (issue 37: the TSO
headline was mostly the wire's per-packet bridging on the receiver's core)."""

from offlab.records import CaseSpec, CpuShare, OffloadProfile, Params, Sample, TrafficSpec
from offlab.report.family import headline_tests
from offlab.report.model import CaseGroup, profile_row, _with_deltas
from offlab.report.tables import cpu_table

ALL_ON = OffloadProfile("all-on", "both", {})
TSO_OFF = OffloadProfile("tso-off", "tx", {"tcp-segmentation-offload": False})
PACED = TrafficSpec("tcp", 5.5, service_demand=80)


def _row(profile, sender_busy, receiver_busy, wire):
    """Paced at 3.68 Gbit/s; the shape the quick plan's bare tcp-sd80 rows had (the
    receiver's core 28 % → 62 % softirq with TSO off: the wire bridging every frame)."""
    case = CaseSpec("bare", 1500, profile, PACED, topology=Params({"wire": wire}))
    samples = []
    for i, jitter in enumerate((-0.5, 0.0, 0.5)):
        cpu = (CpuShare(0, {"usr": sender_busy + jitter, "idle": 100 - sender_busy - jitter}),
               CpuShare(1, {"soft": receiver_busy + jitter, "idle": 100 - receiver_busy - jitter}))
        samples.append(Sample(case.key, i, 0.0, 5.5, 3.68e9, 3.68e9, cpu=cpu,
                              roles={"sender": 0, "receiver": 1}))
    return profile_row(case, samples)


def _group(wire):
    on, off = _row(ALL_ON, 50.0, 57.0, wire), _row(TSO_OFF, 60.0, 81.0, wire)
    return CaseGroup("bare", 1500, PACED, "tx", on, (on, _with_deltas(off, on)))


def test_on_the_nic_wire_the_headline_is_the_senders_core():
    group = _group("nic")
    on, off = group.rows
    assert on.cpu_basis == "sender's core"
    assert round(on.cpu_per_gbps.mean, 2) == round(50.0 / 3.68, 2)
    assert round(off.cpu_per_gbps.mean, 2) == round(60.0 / 3.68, 2)
    (headline,) = headline_tests(group)
    assert round(headline.change.ratio, 3) == round(50.0 / 60.0 - 1, 3)  # −17 %, not every core's −23 %
    assert headline.phrase().startswith("sender's CPU per Gbps by −17%")
    rows = {line[0]: line[1:] for line in cpu_table(group).rows}
    assert rows["CPU % per Gbps, sender's core (headline)"][0].startswith("13.6")
    # every core, the wire's work in it, is there too, named for what it holds
    assert rows["CPU % per Gbps, all cores (with the wire's bridging and segmenting)"][0].startswith("29.1")


def test_without_the_wire_namespace_the_headline_is_every_core():
    group = _group("mtu")
    on, _ = group.rows
    assert on.cpu_basis == "all cores" and group.cpu_metric == "CPU per Gbps"
    assert round(on.cpu_per_gbps.mean, 2) == round(107.0 / 3.68, 2)
