"""DUT layouts as a topology parameter: cores and roles (no namespaces are built here)."""

import pytest

from offlab.records import Params
from offlab.topology import TopologyError, build


@pytest.mark.parametrize("direction, receiver_steer, sender_steer", [
    ("rcv", 1, 0),  # the DUT receives: its (receiver host's) softirq on the softirq core
    ("snd", 0, 1),  # the DUT sends: its (sender host's) ACK processing on the softirq core
])
def test_the_dut_hosts_receive_path_goes_to_the_softirq_core(direction, receiver_steer, sender_steer):
    topo = build("vxlan", 1500, Params(dut=direction))
    assert (topo.receiver_core, topo.sender_core) == (receiver_steer, sender_steer)
    assert topo.roles == {"dut-app": 0, "dut-softirq": 1, "generator": 0}
    assert topo.dut.app_core == 0 and topo.dut.softirq_core == 1


def test_without_the_parameter_each_host_has_its_core():
    topo = build("bare", 1500)
    assert topo.dut is None and topo.roles == {"sender": 0, "receiver": 1}


def test_a_layout_without_steering_is_refused():
    with pytest.raises(TopologyError, match="needs softirq steering"):
        build("vxlan", 1500, Params(dut="snd"), steer_rx_softirq=False)


def test_unknown_direction_is_refused():
    with pytest.raises(TopologyError, match="'rcv' or 'snd'"):
        build("bare", 1500, Params(dut="both"))
