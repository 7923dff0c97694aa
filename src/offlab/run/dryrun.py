"""`offlab run --hosts FILE --dry-run`: per server, what the run would change — each test
interface with its MTU from → to and every ethtool feature it would toggle (as it is now
→ the values the profiles set), the devices it would create, the sysctls and routes it
would set, the processes it would start and the files it would copy. "Now" is read over
SSH with read-only commands (`cat`, `ethtool -k`, `sha256sum`); a server that cannot be
reached is said so and the plan's side is still listed. Nothing is changed."""

from __future__ import annotations

from typing import Iterable

from ..hosts.offloads import TOGGLED, parse_features
from ..records import CaseSpec
from ..hosts.base import HostError
from .confirm import tunnel_text
from ..hosts.facts import steering_text
from ..hosts.hostsfile import HostsFile, HostSpec
from ..hosts.router import bridged_by_fwd, forwarding_key, forwarding_path, routed_by_kernel
from ..hosts.ssh import SshHost


def describe_hosts(hosts: HostsFile, cases: Iterable[CaseSpec], steer_rx_softirq: bool) -> list[str]:
    """The `--dry-run` lines for real hosts, one block per server."""
    cases = list(cases)
    pair = [c for c in cases if c.scenario != "middlebox"]
    middlebox = [c for c in cases if c.scenario == "middlebox"]
    lines = ["would change on these servers (each change journaled first and put back at the end; "
             "nothing else on them):"]
    for role, spec in hosts.roles().items():
        mine = middlebox + (pair if role != "router" else [])
        if not mine:
            continue
        host = SshHost(role, spec, hosts.ssh_config)
        try:
            lines += _server(host, spec, role, pair, middlebox, hosts, steer_rx_softirq)
        finally:
            host.close()
    return lines


def _server(host: SshHost, spec: HostSpec, role: str, pair: list[CaseSpec], middlebox: list[CaseSpec],
            hosts: HostsFile, steer_rx_softirq: bool) -> list[str]:
    lines = [f"  {role} {spec.ssh}:"]
    side = {"sender": "tx", "receiver": "rx", "router": "router"}[role]
    toggled = pair if role != "router" else []
    toggled += middlebox if role == "router" else []
    for interface in spec.interfaces or (spec.interface,):
        lines.append(f"    interface {interface}: {_mtu(host, interface, pair + middlebox)}")
        features = _features(host, interface, toggled, side)
        lines.append(f"      ethtool -K: {features}" if features else "      ethtool -K: none")
    lines += [f"    {line}" for line in _other_changes(host, spec, role, pair, middlebox, hosts, steer_rx_softirq)]
    return lines


def _now(host: SshHost, args: list[str]) -> str | None:
    """A read-only command's output, None if the server cannot be asked."""
    try:
        done = host.run(args, check=False, timeout=15)
    except HostError:
        return None
    return done.stdout if done.returncode == 0 else None


def _mtu(host: SshHost, interface: str, cases: list[CaseSpec]) -> str:
    now = _now(host, ["cat", f"/sys/class/net/{interface}/mtu"])
    wanted = sorted({c.mtu for c in cases})
    shown = now.strip() if now is not None else "? (not reachable now)"
    return f"MTU {shown} -> {', '.join(map(str, wanted))} (one per topology), then {shown} again"


def _features(host: SshHost, interface: str, cases: list[CaseSpec], side: str) -> str:
    """"tcp-segmentation-offload on -> on/off, …": each feature the run sets here."""
    if not cases:
        return ""
    listing = _now(host, ["ethtool", "-k", interface])
    features = parse_features(listing).features if listing is not None else {}
    values: dict[str, set[bool]] = {name: {True} for name in TOGGLED}  # every profile's all-on baseline
    for case in cases:
        if case.profile.side in ("both", side):
            for name, on in case.profile.features.items():
                values.setdefault(name, set()).add(on)
    said = []
    for name, wanted in sorted(values.items()):
        found = features.get(name)
        if listing is not None and (found is None or found.fixed):
            continue  # the interface has no such feature to switch, or cannot switch it
        now = "?" if found is None else ("on" if found.on else "off")
        said.append(f"{name} {now} -> {'/'.join('on' if v else 'off' for v in sorted(wanted, reverse=True))}")
    return ", ".join(said)


def _other_changes(host: SshHost, spec: HostSpec, role: str, pair: list[CaseSpec], middlebox: list[CaseSpec],
                   hosts: HostsFile, steer_rx_softirq: bool) -> list[str]:
    from ..topology.tunnel import KINDS, TX_TUNNEL
    said = []
    tunnels = sorted({c.scenario for c in pair if c.scenario in KINDS})
    if tunnels and role != "router":
        said.append(f"device {TX_TUNNEL} created and removed ({', '.join(tunnels)}; {tunnel_text(hosts, tunnels)})")
    steering = steering_text(spec, steer_rx_softirq)
    if pair and role != "router" and not steering.startswith("none"):
        said.append(steering)
    processes = _processes(role, pair, middlebox, hosts.test_network.iperf3_port)
    said.append("processes started and ended: " + (", ".join(processes) or "none"))
    if role != "router":
        from ..topology.remote_guests import planned_changes
        said += planned_changes(role, spec, pair, hosts.test_network)
    said += _host_wide(host, role, [*pair, *middlebox])
    if role == "router":
        said += _router_changes(host, hosts, middlebox)
    elif bridged_by_fwd(middlebox):
        peer = hosts.hosts["receiver" if role == "sender" else "sender"]
        said.append(f"while R is offlab-fwd: route {peer.address} dev {spec.interface} and a permanent "
                    f"neighbour entry for it (the peer's MAC), removed after")
    return said


def _host_wide(host: SshHost, role: str, cases: list[CaseSpec]) -> list[str]:
    """Each host-wide sysctl the run raises there, with its value now."""
    from ..measure.sockbuf import LIMITS, UDP_SOCKET_BUFFER
    from .confirm import host_wide
    if not host_wide(cases, role):
        return []
    said = []
    for key in LIMITS:
        now = _now(host, ["cat", "/proc/sys/" + key.replace(".", "/")])
        value = "? (not reachable now)" if now is None else now.strip()
        if value.isdigit() and int(value) >= UDP_SOCKET_BUFFER:
            said.append(f"host-wide {key} already {value}: left as is")
        else:
            said.append(f"host-wide {key} {value} -> {UDP_SOCKET_BUFFER} (every socket's limit there), then back")
    return said


def _processes(role: str, pair: list[CaseSpec], middlebox: list[CaseSpec], port: int) -> list[str]:
    node = {"sender": "a", "receiver": "b", "router": "r"}[role]
    found = set()
    for case in pair:
        if role != "router":
            found.add(f"iperf3 -c (port {port})" if role == "sender" else f"iperf3 -s (port {port})")
            if case.traffic.latency_probe and not case.traffic.service_demand:
                found.add("irtt client" if role == "sender" else "irtt server")
            if case.traffic.mode == "rr" or (case.traffic.latency_probe and case.traffic.service_demand):
                found.add("sockperf ping-pong" if role == "sender" else "sockperf server")
    for case in middlebox:
        path = str(case.topology.get("path", ""))
        ends = path.split("-")
        if node in ends:
            found.add(f"iperf3 -c (port {port})" if ends[0] == node else f"iperf3 -s (port {port})")
        if node == "r" and case.topology.get("router") == "offlab-fwd":
            found.add("offlab-fwd (AF_PACKET on both interfaces)")
    return sorted(found)


def _router_changes(host: SshHost, hosts: HostsFile, middlebox: list[CaseSpec]) -> list[str]:
    from ..topology.fwd import FwdError, find_binary
    from ..hosts import files
    said = []
    if routed_by_kernel(middlebox):
        path = forwarding_path(hosts)
        now = _now(host, ["cat", path])
        state = "? (not reachable now)" if now is None else now.strip()
        said.append(f"{forwarding_key(path)} {state} -> 1 only with --allow-forwarding (refused otherwise "
                    "when 0), then back" if state != "1" else f"{forwarding_key(path)} already 1: left as is")
    if bridged_by_fwd(middlebox):
        try:
            binary = find_binary()
        except FwdError as err:
            return said + [f"offlab-fwd cannot be copied: {err}"]
        digest = files.sha256(binary)
        target = files.cached_path(digest, binary.name)
        there = (_now(host, ["sha256sum", target]) or "").split()[:1] == [digest]
        said.append(f"file {target}: " + ("already there (same hash), nothing copied" if there else
                                          "copied from this machine's offlab-fwd (kept, by hash)"))
    return said
