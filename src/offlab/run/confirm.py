"""What a run will change on each server, said before the first change so the operator
can say yes (or pass --yes): the interface, its MTUs, the features toggled, the devices
created, the steering, the processes started."""

from __future__ import annotations

from typing import Iterable

from ..records import CaseSpec
from ..hosts.facts import steering_text
from ..hosts.hostsfile import HostsFile


def tunnel_text(hosts: HostsFile, tunnels: list[str]) -> str:
    """The tunnels' settings from [test_network]: "inner 10.202.0.0/24, VXLAN VNI 42 on UDP 4789"."""
    net = hosts.test_network
    vxlan = f", VXLAN VNI {net.vni} on UDP {net.vxlan_port}" if "vxlan" in tunnels else ""
    return f"inner {net.prefix}{vxlan}"


def planned_changes(hosts: HostsFile, cases: Iterable[CaseSpec], steer_rx_softirq: bool) -> list[str]:
    """One line per server (the sender and the receiver; hosts/router.py says R's), with
    only what the plan does there: a middlebox case sets their MTU and may run iperf3
    on them, but toggles R's features, not theirs, and steers nothing."""
    from ..topology.tunnel import KINDS, TX_TUNNEL
    cases = list(cases)
    pair = [c for c in cases if c.scenario != "middlebox"]
    mtus = sorted({c.mtu for c in cases})
    tunnels = sorted({c.scenario for c in pair if c.scenario in KINDS})
    lines = []
    for role, spec in hosts.hosts.items():
        parts = [f"MTU set to {', '.join(map(str, mtus))} (and put back)"]
        if pair:
            off = features_off(pair, "tx" if role == "sender" else "rx")
            parts.append(f"ethtool features turned off and back on: {', '.join(off) or 'none'}")
        if tunnels:
            parts.append(f"device {TX_TUNNEL} created and removed ({', '.join(tunnels)}; "
                         f"{tunnel_text(hosts, tunnels)})")
        steering = steering_text(spec, steer_rx_softirq)
        if pair and not steering.startswith("none"):
            parts.append(steering)
        if pair or _on_a_middlebox_path(cases, "a" if role == "sender" else "b"):
            parts.append(f"iperf3 (port {hosts.test_network.iperf3_port}; and the plan's probes) started and ended")
        from ..topology.remote_guests import planned_changes
        parts += planned_changes(role, spec, cases, hosts.test_network)
        parts += host_wide(cases, role)
        lines.append(f"{role} {spec.ssh}, interface {spec.interface}: " + "; ".join(parts))
    return lines


def host_wide(cases: Iterable[CaseSpec], role: str) -> list[str]:
    """The host-wide sysctls a run raises on a server (for every socket there, not only
    offlab's): UDP cases raise the socket buffer limits (sockbuf.py) where lower."""
    from ..measure.sockbuf import LIMITS, UDP_SOCKET_BUFFER
    udp = [c for c in cases if c.traffic.protocol == "udp"
           and (c.scenario != "middlebox" or _on_a_middlebox_path([c], "a" if role == "sender" else "b"))]
    if not udp or role == "router":
        return []
    return [f"host-wide {' and '.join(LIMITS)} raised to {UDP_SOCKET_BUFFER} where lower (every socket's "
            "buffer limit on that server; journaled and put back)"]


def features_off(cases: Iterable[CaseSpec], side: str) -> list[str]:
    """The features the cases' profiles turn off on one side's interfaces ("tx", "rx")."""
    return sorted({f for c in cases if c.profile.side in ("both", side)
                   for f, on in c.profile.features.items() if not on})


def _on_a_middlebox_path(cases: list[CaseSpec], node: str) -> bool:
    return any(c.scenario == "middlebox" and node in str(c.topology.get("path", "")).split("-") for c in cases)
