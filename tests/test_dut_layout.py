"""DUT layouts as scenarios: names, cores and roles (no namespaces are built here)."""

import pytest

from offlab.topology import DUT_LAYOUTS, SCENARIOS, TUNNELLED, TopologyError, build
from offlab.topology.dut import dut_variant
from offlab.topology.bare import Bare


def test_bare_and_vxlan_have_both_directions_registered():
    assert set(DUT_LAYOUTS) == {"bare-dut-rcv", "bare-dut-snd", "vxlan-dut-rcv", "vxlan-dut-snd"}
    assert not set(DUT_LAYOUTS) & set(SCENARIOS)  # chosen with the plan's dut key only
    assert {"vxlan-dut-rcv", "vxlan-dut-snd"} <= TUNNELLED
    assert "bare-dut-rcv" not in TUNNELLED


@pytest.mark.parametrize("direction, receiver_steer, sender_steer", [
    ("rcv", 1, 0),  # the DUT receives: its (receiver host's) softirq on the softirq core
    ("snd", 0, 1),  # the DUT sends: its (sender host's) ACK processing on the softirq core
])
def test_the_dut_hosts_receive_path_goes_to_the_softirq_core(direction, receiver_steer,
                                                             sender_steer):
    topo = build(f"vxlan-dut-{direction}", 1500)
    assert (topo.receiver_core, topo.sender_core) == (receiver_steer, sender_steer)
    assert topo.roles == {"dut-app": 0, "dut-softirq": 1, "generator": 0}
    assert topo.app_core == 0 and topo.softirq_core == 1


def test_cores_can_be_swapped():
    topo = build("bare-dut-rcv", 1500, app_core=1, softirq_core=0)
    assert topo.roles == {"dut-app": 1, "dut-softirq": 0, "generator": 1}
    assert topo.receiver_core == 0


def test_a_layout_without_steering_is_refused():
    with pytest.raises(TopologyError, match="needs softirq steering"):
        build("vxlan-dut-snd", 1500, steer_rx_softirq=False)


def test_unknown_direction_is_refused():
    with pytest.raises(ValueError, match="'rcv' or 'snd'"):
        dut_variant(Bare, "both")
