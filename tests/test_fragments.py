"""A UDP case whose datagrams did not fit the path's MTU (1472 bytes of payload over a
1450-byte VXLAN device: 824 bytes per packet on the wire, issue 37) is named IP-fragmented
from the sender's own counters, beside its bytes per packet, and advises nothing."""

import random

from offlab.records import CaseSpec, OffloadProfile, Sample, TrafficSpec
from offlab.report.fragments import fragmentation
from offlab.report.model import CaseGroup, profile_row
from offlab.report.recommend import group_steps, recommend
from offlab.report.validity import exclusion
from offlab.report.wire_view import packet_cells

ALL_ON = OffloadProfile("all-on", "both", {})
TXCSUM_GSO_OFF = OffloadProfile("txcsum+gso-off", "tx", {"tx-checksumming": False,
                                                         "generic-segmentation-offload": False})
UDP = TrafficSpec("udp", 1.0, udp_payload=1472)


def _row(profile, gbps, fragments_per_datagram):
    case = CaseSpec("vxlan", 1500, profile, UDP)
    rng = random.Random(len(profile.name))
    samples = []
    for i in range(4):
        datagrams = 80_000
        # The shape /proc/net/snmp deltas take in a VXLAN UDP sample: every datagram
        # fragmented into a full and a short fragment; the veth's counters over the test.
        counters = {"tx:Udp.OutDatagrams": datagrams, "rx:Udp.InDatagrams": datagrams,
                    "tx:dev.ofl-v0.tx_packets": 2 * datagrams, "tx:dev.ofl-v0.tx_bytes": 2 * datagrams * 824,
                    "rx:dev.ofl-v1.rx_packets": 2 * datagrams, "rx:dev.ofl-v1.rx_bytes": 2 * datagrams * 810}
        if fragments_per_datagram:
            counters.update({"tx:Ip.FragOKs": datagrams, "tx:Ip.FragCreates": fragments_per_datagram * datagrams,
                             "rx:Ip.ReasmOKs": datagrams})
        samples.append(Sample(case.key, i, 0.0, 1.0, gbps * 1e9 * rng.uniform(0.99, 1.01), gbps * 1e9,
                              lost_packets=0, total_packets=datagrams, counters=counters))
    return profile_row(case, samples)


def _group(rows):
    return CaseGroup("vxlan", 1500, UDP, "tx", rows[0], tuple(rows))


def test_fragmented_datagrams_are_counted_from_the_senders_ip_counters():
    found = fragmentation(_row(ALL_ON, 1.1, 2))
    assert (found.datagrams, found.fragmented, found.fragments) == (320_000, 320_000, 640_000)
    assert found.per_datagram == 2 and found.share == 1.0
    assert fragmentation(_row(ALL_ON, 1.1, 0)) is None


def test_the_bytes_per_packet_cell_says_the_datagrams_were_fragmented():
    assert packet_cells(_row(ALL_ON, 1.1, 2)) == ("–", "824 · 810 (whole test) ⚠ IP-fragmented: 2 per datagram")
    assert packet_cells(_row(ALL_ON, 1.1, 0)) == ("–", "824 · 810 (whole test)")


def test_a_fragmenting_udp_case_advises_nothing_and_says_why():
    rows = [_row(ALL_ON, 1.6, 2), _row(TXCSUM_GSO_OFF, 1.0, 2)]  # a large, clean difference
    (step,) = group_steps(_group(rows))
    why = exclusion(step, virtual_devices=False)
    assert why.label == "IP-fragmented" and "2 IP fragments per datagram (100% of datagrams" in why.why
    recs = recommend([_group(rows)], virtual_devices=False)
    assert recs.goals == () and len(recs.excluded) == 1
    # The same difference without fragmentation is advice.
    clean = [_row(ALL_ON, 1.6, 0), _row(TXCSUM_GSO_OFF, 1.0, 0)]
    assert recommend([_group(clean)], virtual_devices=False).goals != ()
