"""Loss by cause: the kernel counters of a trial read as where datagrams were dropped."""

import pytest

from offlab.measure import losscause
from offlab.measure.losscause import (BACKLOG, CHECKSUM, INTERFACE, IP_LAYER, RCVBUF, SENDER_QUEUE, SNDBUF,
                                      SOCKET_OTHER, UNEXPLAINED, attribute, from_sample_counters)


def test_receive_buffer_overflow_is_named_and_flags_the_trial():
    grown = {"rx:Udp.RcvbufErrors": 900, "rx:Udp.InErrors": 900, "rx:Udp.InDatagrams": 10_000,
             "tx:Udp.OutDatagrams": 11_000}
    causes = attribute(950, grown, "tx", "rx")
    assert causes.counts[RCVBUF] == 900 and causes.counts[SOCKET_OTHER] == 0
    assert causes.counts[UNEXPLAINED] == 50  # lost but in no counter
    assert causes.main == RCVBUF and causes.socket_buffer_bound
    assert causes.text().startswith("95 % receiver socket buffer")


def test_every_cause_comes_from_its_own_counter_and_host():
    grown = {
        "tx:Udp.SndbufErrors": 10, "rx:Udp.InCsumErrors": 5, "rx:Udp.InErrors": 5 + 7,
        "rx:dev.ofl-v1.rx_drop": 20, "r:qdisc.ofl-r0.drops": 3, "rx:nic.ens1.rx_missed_errors": 4,
        "r:Ip.InDiscards": 2, "softnet.dropped": 23 + 6,
        "rx:Udp.RcvbufErrors": 0, "tx:Udp.RcvbufErrors": 99,  # the sender's own socket: not this flow
        "rx:dev.ofl-v1.rx_packets": 1_000_000,
    }
    causes = attribute(0, grown, "tx", "rx")
    assert causes.counts == {RCVBUF: 0, SENDER_QUEUE: 0, SNDBUF: 10, CHECKSUM: 5, SOCKET_OTHER: 7,
                             INTERFACE: 20 + 3, IP_LAYER: 2, BACKLOG: 6, UNEXPLAINED: 0}
    assert causes.main == INTERFACE and not causes.socket_buffer_bound


def test_a_drop_at_the_senders_device_counts_once_not_three_times():
    # veth_xmit drops (peer backlog full) → Ip.OutDiscards → ENOBUFS → Udp.SndbufErrors:
    # one datagram in three counters of the sender, and in the machine's backlog drops.
    grown = {"tx:dev.ofl-v0.tx_drop": 300, "tx:Ip.OutDiscards": 300, "tx:Udp.SndbufErrors": 300,
             "softnet.dropped": 300}
    causes = attribute(310, grown, "tx", "rx")
    assert causes.counts[SENDER_QUEUE] == 300 and causes.counts[UNEXPLAINED] == 10
    assert sum(causes.counts.values()) == 310 and not causes.socket_buffer_bound
    assert causes.main == SENDER_QUEUE
    # Over VXLAN the tunnel device counts the underlay veth's drop again.
    tunnel = attribute(300, {"tx:dev.ofl-v0.tx_drop": 300, "tx:dev.ofl-tn0.tx_drop": 300}, "tx", "rx")
    assert tunnel.counts[SENDER_QUEUE] == 300 and tunnel.counts[UNEXPLAINED] == 0


def test_nothing_lost_has_no_cause_and_counters_round_trip():
    quiet = attribute(0, {"rx:Udp.InDatagrams": 5}, "tx", "rx")
    assert quiet.main is None and quiet.text() == "none" and quiet.share(RCVBUF) == 0
    lossy = attribute(40, {"rx:Udp.RcvbufErrors": 30}, "tx", "rx")
    stored = lossy.counters("limit_loss")
    assert stored == {"limit_loss_lost": 40.0, "limit_loss_rcvbuf": 30.0, "limit_loss_unexplained": 10.0}
    again = from_sample_counters(stored, "limit_loss")
    assert again is not None and again.counts == lossy.counts and again.lost == 40
    assert from_sample_counters({}, "loss") is None


def test_qdisc_and_softnet_parsers_read_the_real_formats():
    text = ('[{"kind":"noqueue","handle":"0:","dev":"lo","drops":0},'
            '{"kind":"mq","handle":"0:","dev":"eth0","drops":3},'
            '{"kind":"fq_codel","handle":"0:","parent":":1","dev":"eth0","drops":4}]')
    assert losscause.parse_qdisc(text) == {"qdisc.lo.drops": 0, "qdisc.eth0.drops": 7}
    assert losscause.parse_qdisc("not json") == {}
    softnet = "0000a1b2 0000000a 00000000\n0000ffff 00000010 00000001\n"
    assert losscause.parse_softnet(softnet) == pytest.approx(10 + 16)
