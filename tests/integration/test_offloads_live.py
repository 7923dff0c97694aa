"""Setting offloads on real veth and VXLAN devices and reading them back."""

from offlab.hosts.offloads import GRO, GSO, RX_CSUM, TSO, TX_CSUM, UDP_TNL, OffloadControl
from offlab.studies.offloads.plan import rx_sequence, tx_sequence
from offlab.topology import build


def test_tx_sequence_on_vxlan_reads_back_and_all_on_restores():
    control = OffloadControl()
    with build("vxlan", 1500) as topo:
        ifaces = topo.offload_interfaces()
        off = control.apply(tx_sequence(tunnel=True)[-1], ifaces)
        for label in ("tx:ofl-tn0", "tx:ofl-v0"):
            for feature in (TSO, TX_CSUM, GSO):
                assert off[label][feature].on is False
                assert off[label][feature].requested is False
        assert off["tx:ofl-v0"][UDP_TNL].on is False            # settable on the underlay
        assert off["tx:ofl-tn0"][UDP_TNL].fixed                  # fixed on the tunnel device
        assert off["rx:ofl-v1"][TSO].on and off["rx:ofl-v1"][TSO].requested is None
        on = control.apply(tx_sequence(tunnel=True)[0], ifaces)
        for label, features in on.items():
            for feature in (TSO, TX_CSUM, GSO, GRO, RX_CSUM):
                assert features[feature].on, (label, feature)  # GRO too: veth's default is off
        assert all(state.as_requested for f in on.values() for state in f.values())


def test_rx_sequence_on_bare():
    control = OffloadControl()
    with build("bare", 1500) as topo:
        state = control.apply(rx_sequence()[-1], topo.offload_interfaces())
        assert state["rx:ofl-v1"][GRO].on is False and state["rx:ofl-v1"][RX_CSUM].on is False
        assert state["tx:ofl-v0"][GRO].on is True
        assert control.malformed_lines == 0
