"""The NIC wire's device towards the receiver queues a whole receive window of MTU
frames (issue 37): at veth's default 1000 packets its qdisc held 64 KiB super-packets
with the sender's TSO on but MTU frames with it off, so TSO-off alone overflowed it and
its rows were set apart for drops. The kernel's own link settings are the oracle."""

import json

from offlab.records import Params
from offlab.hosts.naming import WIRE_RX
from offlab.topology.bare import Bare
from offlab.topology import SCENARIOS


def _qlen(host, device):
    return json.loads(host.ip("-j", "link", "show", "dev", device).stdout)[0]["txqlen"]


def test_the_nic_wire_queues_a_receive_window_of_mtu_frames():
    for scenario in (Bare, SCENARIOS["vxlan"]):
        with scenario(1500, Params({"wire": "nic"})) as topology:
            rmem_max = int(topology.rx.read_file("/proc/sys/net/ipv4/tcp_rmem").split()[2])
            queued = _qlen(topology.wire_host, WIRE_RX)
            assert queued * 1398 >= rmem_max  # even at VXLAN's inner MSS, a whole window
