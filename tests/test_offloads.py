"""ethtool -k parsing on recorded output, the seed's profile sequences, and applying a
profile through a recorded-output ethtool stand-in (the real one runs in integration)."""

from pathlib import Path

from offlab.hosts import offloads
from offlab.hosts.offloads import (GRO, GSO, RX_CSUM, TSO, TX_CSUM, UDP_TNL, Interface, OffloadControl,
                                   parse_features)
from offlab.studies.offloads.plan import one_off_at_a_time, rx_sequence, tx_sequence
from tests.fixtures.recording_host import RecordingHost

FIXTURES = Path(__file__).parent / "fixtures"


def listing(name: str):
    return parse_features((FIXTURES / name).read_text())


def test_veth_defaults_recorded_here():
    parsed = listing("ethtool-k-veth.txt")
    assert parsed.malformed == ()
    f = parsed.features
    assert f[TSO].on and f[TX_CSUM].on and f[GSO].on and f[RX_CSUM].on
    assert not f[GRO].on and not f[GRO].fixed  # veth: GRO off by default, but settable
    assert f[UDP_TNL].on and not f[UDP_TNL].fixed
    assert f["large-receive-offload"].fixed and not f["large-receive-offload"].on
    assert f["tx-checksum-ipv4"].fixed  # indented child features are parsed too


def test_vxlan_has_tunnel_segmentation_fixed_off():
    f = listing("ethtool-k-vxlan.txt").features
    assert f[UDP_TNL].fixed and not f[UDP_TNL].on
    assert f[GRO].on


def test_cascade_and_requested_state_after_tx_sequence():
    f = listing("ethtool-k-veth-tx-all-off.txt").features
    assert not f[TSO].on and not f[TX_CSUM].on and not f[GSO].on
    # tx-udp-segmentation was left "on" but cannot be without checksumming: a cascade
    assert not f["tx-udp-segmentation"].on
    assert f["tx-udp-segmentation"].requested_on is True


def test_qualifiers_and_malformed_lines():
    parsed = parse_features(
        "Features for x:\na: on\nb: off [fixed]\nc: off [requested on]\n"
        "d: on [requested off]\nnonsense\ne: maybe\nf: on [weird]\n"
    )
    assert parsed.features["a"] == offloads.EthtoolFeature(True)
    assert parsed.features["b"] == offloads.EthtoolFeature(False, fixed=True)
    assert parsed.features["c"].requested_on is True
    assert parsed.features["d"].requested_on is False
    assert len(parsed.malformed) == 3
    assert "line 6" in parsed.malformed[0]


def test_tx_sequence_is_cumulative_and_tunnel_aware():
    bare = tx_sequence(tunnel=False)
    assert [p.name for p in bare] == ["all-on", "tso-off", "tso+txcsum-off", "tso+txcsum+gso-off"]
    assert bare[0].side == "both" and bare[0].features == {}
    assert bare[2].features == {TSO: False, TX_CSUM: False}
    assert UDP_TNL not in bare[3].features
    assert tx_sequence(tunnel=True)[3].features == {TSO: False, TX_CSUM: False, GSO: False, UDP_TNL: False}


def test_rx_sequence_and_single_mode():
    assert [p.features for p in rx_sequence()] == [{}, {GRO: False}, {GRO: False, RX_CSUM: False}]
    singles = one_off_at_a_time("tx", tunnel=True)
    assert [p.name for p in singles] == ["all-on", "only-tso-off", "only-txcsum-off", "only-gso-off", "only-udptnl-off"]
    assert all(len(p.features) == 1 for p in singles[1:])


def test_apply_skips_fixed_and_unchanged_features_and_marks_requests():
    text = (FIXTURES / "ethtool-k-vxlan.txt").read_text()
    tx_host = RecordingHost("tx", lambda args: text if "-k" in args else "")
    rx_host = RecordingHost("rx", lambda args: text if "-k" in args else "")
    control = OffloadControl()
    tx = Interface("tx", tx_host, "ofl-vx0")
    rx = Interface("rx", rx_host, "ofl-vx1")
    profile = tx_sequence(tunnel=True)[1]  # TSO off
    state = control.apply(profile, [tx, rx])
    sets = [c for c in tx_host.calls if "-K" in c]
    assert sets[0] == ["ethtool", "-K", "ofl-vx0", TSO, "off"]
    assert UDP_TNL not in sets[0]  # fixed on this device: never asked
    assert state["tx:ofl-vx0"][TSO].requested is False
    assert state["rx:ofl-vx1"][TSO].requested is None  # the profile leaves the receiver alone
    assert state["tx:ofl-vx0"][UDP_TNL].fixed
