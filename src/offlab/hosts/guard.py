"""Guards read on every server before a run changes anything, each refusal one line with
its fix:

* **lockout** — the test interface must carry nothing but the test: not the SSH session
  offlab itself arrives by (`$SSH_CONNECTION` as the server sees it, routed back as
  policy routing picks it: `ip route get CLIENT from SERVER`), not a default route of
  any table or family (a multipath route's next hops and `nhid` nexthop groups
  included), not a bond/bridge port (a master) nor the parent of VLAN/macvlan/ipvlan
  devices (upper devices, in any named namespace too) or of SR-IOV VFs, and no address
  outside the test prefix. A run sets the MTU and link state
  of the test interface and `ethtool -K` on it, which on many drivers resets the link:
  on a management interface the session, and the restore, go with it. The operator may
  take that risk with `--allow-shared-interface` (then `pin_irqs` is still refused: it
  would move the IRQs of traffic that is not the test's);
* **one kernel, one role** — two roles whose servers report the same boot id are one
  kernel: their CPU and counters are not two hosts'. Refused unless the hosts file says
  `same_kernel = true`;
* **UDP within a cap** — no congestion control on a network others may use: at most
  `udp_max_rate` (1 Gbit/s unless the hosts file raises it) offered in total by a case
  (rate x streams x directions, irtt probes and UDP ping-pong counted);
* **nothing of another offlab** — `ofl-` devices already there (another run's, or a
  killed one's) are refused, and so are iperf3's TCP port taken on the receiver (named
  with the process holding it), a VXLAN device already on offlab's VNI and port, and an
  address of the test interface inside offlab's prefixes (all of [test_network]).
"""

from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable

from ..proc import Completed
from ..records import PROBE_INTERVAL_MS, RR_MESSAGE
from . import batch
from .base import HostError
from .hostsfile import HostsFile, HostSpec

if TYPE_CHECKING:
    from ..records import CaseSpec, TrafficSpec
    from .ssh import SshHost

OVERRIDE_FLAG = "--allow-shared-interface"
UPPER_KINDS = frozenset({"macvlan", "macvtap", "ipvlan", "ipvtap", "vlan"})
"""Devices that sit on a lower device from another namespace (a container's): a veth
peer names its peer's index the same way and is not one."""
OUR_PREFIX = "ofl-"


@dataclass(frozen=True)
class InterfaceUse:
    """What a server says about its test interface's other users."""

    ssh_connection: str
    """`$SSH_CONNECTION` of offlab's own session: client address, port, server address, port."""
    ssh_route_device: str
    """The device the server's route back to that client leaves by."""
    links: tuple[dict[str, Any], ...]
    addresses: tuple[dict[str, Any], ...]
    """`addr_info` of the test interface."""
    default_routes: tuple[dict[str, Any], ...]
    boot_id: str
    listening: tuple[str, ...] = ()
    """`ss -Hltnp` lines: the TCP ports taken, with the process holding each."""
    nexthops: tuple[dict[str, Any], ...] = ()
    """`ip -j nexthop show`: the objects a route's `nhid` names (a device, or a group)."""
    foreign_links: tuple[dict[str, Any], ...] = ()
    """`ip -d link show` of every named network namespace, each with its "netns" added:
    a macvlan/ipvlan/VLAN of a container sits on the test interface from there."""


def inspect(host: "SshHost", spec: HostSpec) -> InterfaceUse:
    """Read what `findings` judges (SSH_CONNECTION as the login user: sudo drops it):
    the route back to offlab's client as policy routing picks it (`from` the address the
    session arrived at), the default routes of every table and family, the nexthop
    objects they may name, and the links of every named network namespace."""
    session = host.run_plain(["sh", "-c", 'echo "$SSH_CONNECTION"'], timeout=15).stdout.strip()
    parts = session.split()
    route_dev = ""
    if len(parts) >= 3:
        found = json.loads(host.ip("-j", "route", "get", parts[0], "from", parts[2], check=False).stdout or "[{}]")
        if not found or not found[0].get("dev"):  # `from` an address the kernel will not source
            found = json.loads(host.ip("-j", "route", "get", parts[0], check=False).stdout or "[{}]")
        route_dev = found[0].get("dev", "") if found else ""
    # The reads that depend on nothing read before: one command on the server (batch.py).
    reads = [["ip", "-j", "-d", "link", "show"], ["ip", "-j", "addr", "show", "dev", spec.interface],
             ["ip", "-j", "-4", "route", "show", "table", "all", "default"],
             ["ip", "-j", "-6", "route", "show", "table", "all", "default"], ["ip", "-j", "nexthop", "show"],
             ["cat", "/proc/sys/kernel/random/boot_id"]]
    links, addresses, defaults4, defaults6, nexthops, boot = batch.run_reads(host, reads)
    for must in (links, boot):  # what every server has: not read is an error, as it was
        batch.require(must, f"{host.name} ({spec.ssh})")
    listening = host.run(["ss", "-Hltnp"], check=False, timeout=15).stdout.splitlines()  # -p: as root
    addr_info = tuple(a for link in _json(addresses) for a in link.get("addr_info", []))
    return InterfaceUse(session, route_dev, tuple(_json(links)), addr_info,
                        tuple(_json(defaults4) + _json(defaults6)), boot.stdout.strip(), tuple(listening),
                        tuple(_json(nexthops)), tuple(_namespace_links(host)))


def _json(done: Completed) -> list[dict[str, Any]]:
    """`ip -j` output; nothing when the command failed (a kernel without nexthops, …)."""
    return json.loads(done.stdout or "[]") if done.returncode == 0 else []


def _namespace_links(host: "SshHost") -> list[dict[str, Any]]:
    """The links of every named namespace, each with `netns` (its namespace) and, for one
    whose lower device is in another namespace, `lower_here`: whether that namespace is
    the one the server's test interface is in. An ifindex is only unique within its
    namespace, so a link index alone would take another namespace's device (a second
    container's, a second server on one kernel) for the test interface."""
    # `ip netns` is root's (privilege.py): not in the batch of reads.
    names = [entry.get("name") for entry in json.loads(host.ip("-j", "netns", "list", check=False).stdout or "[]")]
    here = set(host.ip("netns", "identify", check=False).stdout.split())  # none for the root namespace
    found = []
    for name in filter(None, names):
        # A namespace may go between the listing and here (ip then exits 255, ssh's own
        # status): it has nothing on the test interface any more.
        shown, ids = (host.run(["sh", "-c", f'ip -n "$1" -j {what} 2>/dev/null || true', "offlab-netns", name],
                               check=False).stdout for what in ("-d link show", "netns list-id"))
        # As this namespace numbers the others: a name for each named one.
        peers = {entry.get("nsid"): entry.get("name") for entry in json.loads(ids or "[]")}
        for link in json.loads(shown or "[]"):
            if "link_netnsid" in link:
                lower = peers.get(link["link_netnsid"])
                link["lower_here"] = lower in here if here else lower is None
            found.append({**link, "netns": name})
    return found


def route_devices(route: dict[str, Any], nexthops: tuple[dict[str, Any], ...]) -> set[str]:
    """Every device a route leaves by: its own, each of a multipath route's `nexthops`,
    each member of the nexthop object (or group) its `nhid` names."""
    devices = {route["dev"]} if route.get("dev") else set()
    devices |= {hop["dev"] for hop in route.get("nexthops", []) if hop.get("dev")}
    by_id = {entry.get("id"): entry for entry in nexthops}
    pending = [route["nhid"]] if "nhid" in route else []
    while pending:
        entry = by_id.get(pending.pop(), {})
        if entry.get("dev"):
            devices.add(entry["dev"])
        pending += [member.get("id") for member in entry.get("group", [])]
    return devices
def port_holder(use: InterfaceUse, port: int) -> str | None:
    """The process (or "a process") listening on TCP `port`, from `ss -Hltnp` lines."""
    for line in use.listening:
        fields = line.split()
        if len(fields) >= 4 and fields[3].rsplit(":", 1)[-1] == str(port):
            users = line.split("users:((", 1)[-1].split(")")[0] if "users:((" in line else ""
            name, _, rest = users.partition(",")
            pid = rest.split("pid=", 1)[-1].split(",")[0] if "pid=" in rest else ""
            return f"{name.strip(chr(34))} (pid {pid})" if name else "a process"
    return None


def tunnel_conflicts(use: InterfaceUse, vni: int, port: int) -> list[str]:
    """VXLAN devices already using offlab's VNI on its UDP port (the kernel would refuse ours)."""
    return [link.get("ifname", "?") for link in use.links
            if link.get("linkinfo", {}).get("info_kind") == "vxlan"
            and link["linkinfo"].get("info_data", {}).get("id") == vni
            and link["linkinfo"].get("info_data", {}).get("port") == port]


def findings(spec: HostSpec, use: InterfaceUse) -> list[str]:
    """Each way the test interface carries more than the test (empty: it is dedicated)."""
    device = spec.interface
    found = []
    parts = use.ssh_connection.split()
    own = {a.get("local") for a in use.addresses}
    if use.ssh_route_device == device or (len(parts) >= 3 and parts[2] in own):
        found.append(f"offlab's own SSH session (from {parts[0] if parts else '?'}) runs over {device}")
    for route in use.default_routes:
        if device in route_devices(route, use.nexthops):
            gateway = route.get("gateway") or next((h.get("gateway") for h in route.get("nexthops", [])
                                                    if h.get("dev") == device), None)
            table = f" (table {route['table']})" if route.get("table") not in (None, "main") else ""
            found.append(f"the default route{' via ' + gateway if gateway else ''}{table} leaves by {device}")
    this = next((link for link in use.links if link.get("ifname") == device), {})
    if this.get("master"):
        found.append(f"{device} is a port of {this['master']} (a bond or bridge)")
    for upper in (link for link in use.links if link.get("link") == device):
        kind = upper.get("linkinfo", {}).get("info_kind", "upper device")
        found.append(f"{upper.get('ifname')} ({kind}) sits on {device}")
    for upper in use.foreign_links:
        kind = upper.get("linkinfo", {}).get("info_kind")
        if kind in UPPER_KINDS and this.get("ifindex") is not None \
                and upper.get("link_index") == this.get("ifindex") and upper.get("lower_here"):
            kind = upper.get("linkinfo", {}).get("info_kind", "upper device")
            found.append(f"{upper.get('ifname')} ({kind}) in namespace {upper['netns']} sits on {device}")
    if this.get("vfinfo_list"):
        found.append(f"{device} has {len(this['vfinfo_list'])} SR-IOV VFs (their traffic goes through it)")
    prefix = _test_prefix(spec, use.addresses)
    for entry in use.addresses:
        address = ipaddress.ip_address(entry.get("local", "::"))
        if address.is_link_local or (prefix is not None and address in prefix):
            continue
        found.append(f"{device} also holds {entry.get('local')}/{entry.get('prefixlen')}, outside the test "
                     f"prefix {prefix or spec.address}")
    return found


def _test_prefix(spec: HostSpec, addresses: tuple[dict[str, Any], ...]):
    for entry in addresses:
        if entry.get("local") == spec.address:
            return ipaddress.ip_network(f"{spec.address}/{entry.get('prefixlen', 32)}", strict=False)
    return None


def prefix_overlaps(use: InterfaceUse, prefix: str) -> list[str]:
    """The test interface's addresses whose networks overlap `prefix` ("192.0.2.1/24")."""
    ours = ipaddress.ip_network(prefix)
    found = []
    for entry in use.addresses:
        network = ipaddress.ip_network(f"{entry.get('local', '::')}/{entry.get('prefixlen', 128)}", strict=False)
        if network.version == ours.version and network.overlaps(ours):
            found.append(f"{entry.get('local')}/{entry.get('prefixlen')}")
    return found


def _check_test_network(hosts: HostsFile, role: str, where: str, use: InterfaceUse) -> None:
    """Refuse what [test_network] would put on the test link that is already taken there:
    iperf3's port, a VXLAN device on the VNI and port, an address in a prefix."""
    net = hosts.test_network
    holder = port_holder(use, net.iperf3_port) if role == "receiver" else None
    if holder is not None:
        raise HostError(f"{where}: TCP port {net.iperf3_port}, iperf3's, is taken by {holder}; end it "
                        "(a killed run's server: `offlab restore`) and run again, or set another "
                        f"iperf3_port in [test_network] of {hosts.source}")
    clash = tunnel_conflicts(use, net.vni, net.vxlan_port)
    if clash:
        raise HostError(f"{where}: {', '.join(clash)} already uses VXLAN VNI {net.vni} on UDP port "
                        f"{net.vxlan_port}, which offlab's VXLAN devices need; remove it, or set another vni "
                        f"in [test_network] of {hosts.source}")
    for key in ("prefix", "guest_prefix"):
        taken = prefix_overlaps(use, getattr(net, key))
        if taken:
            raise HostError(f"{where}: {hosts.hosts[role].interface} holds {taken[0]}, overlapping {key} "
                            f"{getattr(net, key)}; set another {key} in [test_network] of {hosts.source}")


def foreign_devices(hosts: HostsFile, use: InterfaceUse) -> list[str]:
    """`ofl-` devices on a server that are not a test interface of the hosts file."""
    ours = {spec.interface for spec in hosts.hosts.values()}
    return sorted(name for link in use.links
                  if (name := link.get("ifname", "")).startswith(OUR_PREFIX) and name not in ours)


def check(hosts: HostsFile, uses: dict[str, InterfaceUse], allow_shared: bool) -> list[str]:
    """Refuse (HostError, one line) or return the warnings of an allowed shared interface."""
    warnings = []
    for role, use in uses.items():
        spec = hosts.hosts[role]
        where = f"{role} ({spec.ssh})"
        shared = findings(spec, use)
        if shared and spec.pin_irqs:
            raise HostError(f"{where}: pin_irqs would move the IRQs of every queue of {spec.interface}, which "
                            f"carries other traffic ({shared[0]}); set pin_irqs = false")
        if shared and not allow_shared:
            raise HostError(f"{where}: {'; '.join(shared)}: changing {spec.interface} (MTU, link, offloads) "
                            f"could cut the server off; use a dedicated test interface, or pass "
                            f"{OVERRIDE_FLAG} to take that risk")
        warnings += [f"{where}: {finding} ({OVERRIDE_FLAG})" for finding in shared]
        _check_test_network(hosts, role, where, use)
        leftovers = foreign_devices(hosts, use)
        if leftovers:
            raise HostError(f"{where}: {', '.join(leftovers)} already there (another offlab run's, or a "
                            "killed one's): run `offlab restore`, or remove them with ip link del")
    boots: dict[str, str] = {}
    for role, use in uses.items():
        other = boots.setdefault(use.boot_id, role)
        if other != role and not hosts.same_kernel:
            raise HostError(f"{other} and {role} are one kernel (boot id {use.boot_id[:8]}…): their CPU and "
                            f"counters would not be two hosts'; use two servers, or set same_kernel = true "
                            f"in {hosts.source}")
    return warnings


def check_servers(hosts: HostsFile, allow_shared: bool) -> list[str]:
    """Read every server and judge it (`check`); the warnings of an allowed shared interface."""
    from .session import HOST_NAMES
    from .ssh import SshHost
    uses = {}
    for role, spec in hosts.hosts.items():
        host = SshHost(HOST_NAMES[role], spec, hosts.ssh_config)
        try:
            uses[role] = inspect(host, spec)
        finally:
            host.close()
    return check(hosts, uses, allow_shared)


IRTT_PACKET_BITS = 100 * 8
"""An irtt probe, UDP/IP headers and irtt's timestamps included, at most (both ways)."""
RR_FLOOR_S = 10e-6
"""The shortest round trip a ping-pong through two kernels takes: UDP request/response
(sockperf) keeps one message in flight each way, so it offers at most this fast."""


def offered_udp_bps(traffic: "TrafficSpec") -> float | None:
    """The UDP a case puts on the servers' network in total, every tool counted: the
    rate is per stream and per direction (iperf3's -b with -P and --bidir), an irtt
    probe beside a stream adds its packets both ways, a UDP ping-pong one message in
    flight each way; None: unbounded (no rate, or a capacity search's first probe)."""
    directions = 2 if traffic.bidirectional else 1
    probe = 2 * IRTT_PACKET_BITS / (PROBE_INTERVAL_MS / 1000) if traffic.latency_probe else 0.0
    if traffic.mode == "rr":
        message = traffic.message_size or RR_MESSAGE
        return 2 * (message + 28) * 8 / RR_FLOOR_S if traffic.protocol == "udp" else probe
    if traffic.protocol != "udp":
        return probe
    if traffic.mode == "capacity" or traffic.rate_bps is None:
        return None
    return traffic.rate_bps * max(1, traffic.streams) * directions + probe


def check_udp_rates(hosts: HostsFile, cases: "Iterable[CaseSpec]") -> None:
    """UDP on real hosts at most at the hosts file's `udp_max_rate` (1 Gbit/s unless
    raised), counted as the whole offered load of each case (offered_udp_bps): an
    unlimited rate, a total above it or a capacity search is refused before the run."""
    cap = hosts.udp_max_bps
    if cap is None:
        return
    for case in cases:
        traffic = case.traffic
        offered = offered_udp_bps(traffic)
        if offered is not None and offered <= cap:
            continue
        if traffic.mode == "capacity":
            what = "a capacity search (unlimited probes)"
        elif offered is None:
            what = "an unlimited rate"
        else:
            parts = [f"{traffic.rate_bps / 1e9:g} Gbit/s" if traffic.rate_bps else ""]
            parts += [f"{traffic.streams} streams"] if traffic.streams > 1 else []
            parts += ["both directions"] if traffic.bidirectional else []
            what = f"{offered / 1e9:g} Gbit/s in total ({' x '.join(p for p in parts if p)})" \
                if traffic.protocol == "udp" and traffic.mode != "rr" else f"up to {offered / 1e9:g} Gbit/s"
        raise HostError(f"{case.key}: UDP at {what} over your servers' network, above the cap of "
                        f"{cap / 1e9:g} Gbit/s; lower the plan's udp_rate (it is per stream and per "
                        f"direction) or streams, or raise the cap with udp_max_rate = \"10G\" (or "
                        f"\"unlimited\") in {hosts.source}")