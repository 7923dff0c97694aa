"""What a run will change on each server, said before the first change so the operator
can say yes (or pass --yes): the interface, its MTUs, the features toggled, the devices
created, the steering, the processes started."""

from __future__ import annotations

from typing import Iterable

from ..records import CaseSpec
from .hostsfile import HostsFile


def tunnel_text(hosts: HostsFile, tunnels: list[str]) -> str:
    """The tunnels' settings from [test_network]: "inner 10.202.0.0/24, VXLAN VNI 42 on UDP 4789"."""
    net = hosts.test_network
    vxlan = f", VXLAN VNI {net.vni} on UDP {net.vxlan_port}" if "vxlan" in tunnels else ""
    return f"inner {net.prefix}{vxlan}"


def planned_changes(hosts: HostsFile, cases: Iterable[CaseSpec], steer_rx_softirq: bool) -> list[str]:
    """One line per server."""
    from ..topology.remote import steering_text
    from ..topology.tunnel import KINDS, TX_TUNNEL
    cases = list(cases)
    mtus = sorted({c.mtu for c in cases})
    off = sorted({f for c in cases for f, on in c.profile.features.items() if not on})
    tunnels = sorted({c.scenario for c in cases if c.scenario in KINDS})
    lines = []
    for role, spec in hosts.hosts.items():
        parts = [f"MTU set to {', '.join(map(str, mtus))} (and put back)",
                 f"ethtool features turned off and back on: {', '.join(off) or 'none'}"]
        if tunnels:
            parts.append(f"device {TX_TUNNEL} created and removed ({', '.join(tunnels)}; "
                         f"{tunnel_text(hosts, tunnels)})")
        steering = steering_text(spec, steer_rx_softirq)
        if not steering.startswith("none"):
            parts.append(steering)
        parts.append(f"iperf3 (port {hosts.test_network.iperf3_port}; and the plan's probes) started and ended")
        from ..topology.remote_guests import planned_changes
        parts += planned_changes(role, spec, cases, hosts.test_network)
        lines.append(f"{role} {spec.ssh}, interface {spec.interface}: " + "; ".join(parts))
    return lines
