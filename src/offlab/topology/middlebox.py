"""`middlebox`: A ⇄ R ⇄ B — seed 003's "Host A — pfSense — Host B" — as one topology,
wherever its three nodes are. `Middlebox` writes the sequence once: the nodes opened,
the two links' four ends at the MTU and addressed, R made to route (its kernel) or to
bridge (offlab-fwd), A's and B's features settled, receive steering, and at the end
offlab-fwd stopped and the nodes put back. A `MiddleboxSite` says where the nodes are
and what the lab owns there, as a guest's `Launcher` says where QEMU runs:

* `Namespaces` (here, the default): three namespaces of this machine joined by veth
  pairs the lab makes and addresses —

      A ofl-ar0 ─── ofl-ar1  R  ofl-rb0 ─── ofl-rb1 B

  R routes between two subnets (its kernel) or its veth ends carry no address and
  offlab-fwd bridges them with two AF_PACKET ports, so A and B share one segment.
  A's and B's interfaces are put all-on once at build time, as the seed's hosts kept
  their defaults.
* `remote_middlebox.OnServers`: the hosts file's sender, router and receiver, their
  interfaces and addresses as the user has them, every change journaled.

Topology parameters: `path` (who sends to whom: a-b, b-a, a-r, r-a, b-r, r-b) and
`router`: "kernel" or "offlab-fwd" (forwarded paths only). The offload matrix is
applied to R's two devices.

Cores, in namespaces, with RPS and pinned NAPI threads (see `Topology.steer_receive`):
every node receives on its own node's core — the sender's node on the sender core, the
receiver's on the receiver core, and R, when it forwards, on the sender core. That is
where a veth forward lands anyway (the receive softirq runs on the CPU that transmitted
into the pair); pinning it makes it the same for every profile, and the CPU table shows
it as the "forwarder" role sharing the sender's core (offlab-fwd is pinned there too).
On servers each node's core is its `app_core`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Callable, ClassVar

from .fwd import FwdConfig, PortSpec
from ..hosts import Host, connect_veth
from ..hosts.naming import device_name
from ..hosts.offloads import TOGGLED, Interface, OffloadControl
from ..records import DatapathSetting, FeatureState, Params
from .base import Endpoint, Topology, TopologyError
from .forwarder import ForwarderComponent


@dataclass(frozen=True)
class Path:
    """One direction of traffic between two of the nodes A, R, B."""

    sender: str
    receiver: str

    @property
    def name(self) -> str:
        return f"{self.sender}-{self.receiver}"

    @property
    def forwarded(self) -> bool:
        """Crosses R (A↔B) rather than ending or starting on it."""
        return "r" not in (self.sender, self.receiver)

    @property
    def label(self) -> str:
        """As the seed's column headers: "A -> B", "R -> A"."""
        return f"{self.sender.upper()} -> {self.receiver.upper()}"


PATHS = {p.name: p for p in (Path(s, r) for s, r in
                             (("a", "b"), ("b", "a"), ("a", "r"), ("r", "a"), ("b", "r"), ("r", "b")))}
KERNEL, FWD = "kernel", "offlab-fwd"
NODES = ("a", "r", "b")
AR_A, AR_R = device_name("ar0"), device_name("ar1")
RB_R, RB_B = device_name("rb0"), device_name("rb1")
ROUTED = {
    ("a", "r"): "10.203.1.1", ("r", "a"): "10.203.1.2",
    ("r", "b"): "10.203.2.1", ("b", "r"): "10.203.2.2",
}
"""Kernel router in namespaces: (node, neighbour it faces) → the node's address on that link."""
BRIDGED = {"a": "10.204.0.1", "b": "10.204.0.2"}
"""offlab-fwd as R in namespaces: A and B on one segment; R's ports carry no address."""
PREFIXLEN = 24
ROUTER_SIDE = "router"
"""Interface side of R's devices: matrix profiles (side "both") reach them."""
STEPS = ("nodes", "links", "mtu", "addresses", "R routes", "R bridges", "ends", "steering")
"""The build's steps in their order, whatever the site; a build takes "R routes" (R as
the kernel) or "R bridges" (R as offlab-fwd), never both."""

End = tuple[str, str]
"""(node, device): one end of one of the two links."""


def choose_path(params: Params) -> tuple[Path, str]:
    """The path and R's kind from a case's topology parameters; one line if they are wrong."""
    path, router = params.get("path"), params.get("router", KERNEL)
    if path not in PATHS or router not in (KERNEL, FWD):
        raise TopologyError(f"middlebox needs path (one of {', '.join(PATHS)}) and router "
                            f"(kernel or offlab-fwd); got {dict(params)}")
    if router == FWD and not PATHS[str(path)].forwarded:
        raise TopologyError(f"offlab-fwd as R only forwards; path {path} ends on R")
    return PATHS[str(path)], str(router)


class MiddleboxSite(ABC):
    """Where the middlebox's nodes are and what the lab owns there: the steps of
    `Middlebox._build` that differ in kind (links made here, cabled there; addresses
    given here, the user's there) and what each node is (its host, core, address)."""

    box: "Middlebox"
    apart: ClassVar[bool] = False
    """The nodes are machines of their own (CPU per node, roles by node)."""
    where: str = ""
    """Appended to offlab-fwd's scenario in its messages ("" here, " on R (ssh)")."""

    def join(self, box: "Middlebox") -> None:
        """The middlebox this site serves (its path, router and MTU are chosen)."""
        self.box = box

    def make_forwarder(self) -> Callable[[FwdConfig], Any] | None:
        """How offlab-fwd as R is made from its config (None: a process here)."""
        return None

    @abstractmethod
    def ends(self) -> tuple[End, End, End, End]:
        """The two links' ends: A's, R's toward A, R's toward B, B's."""

    @abstractmethod
    def open(self) -> dict[str, Host]:
        """The three nodes by name ("a", "r", "b"), ready to be changed."""

    def connect(self) -> None:
        """Make the two links, where the lab makes them (a server's are cabled)."""

    def before_mtu(self, node: str, device: str, mtu: int) -> None:
        """What the site writes down before a device's MTU changes (a server's journal)."""

    @abstractmethod
    def address(self) -> None:
        """The four ends addressed, or their addresses learnt (what `node_address` says)."""

    @abstractmethod
    def node_core(self, node: str) -> int:
        """The core a node's receive processing (and its iperf3, if any) runs on."""

    @abstractmethod
    def node_address(self, node: str, other: str) -> str:
        """`node`'s address as `other` reaches it."""

    def router_namespace(self) -> str:
        """The namespace offlab-fwd opens R's devices in ("" on a server: its own)."""
        return ""

    def baseline(self, device: str) -> dict[str, bool] | None:
        """The features R's `device` starts each profile from (None: all on)."""
        return None

    @abstractmethod
    def route(self) -> None:
        """R's kernel routes A ⇄ B: its IP forwarding on, A and B each with a route via R."""

    @abstractmethod
    def bridge(self) -> None:
        """R bridges A and B through offlab-fwd: whatever A, B and R need besides its ports."""

    def settle_ends(self) -> None:
        """A's and B's own features (left as they are unless the site says)."""

    def steer(self) -> None:
        """Receive processing of the four ends on their nodes' cores (none unless the
        site steers it: a server's stays where its NIC's IRQs put it)."""

    def nic_interfaces(self) -> dict[str, list[str]]:
        """node → NICs whose own counters a sample keeps (none on veths)."""
        return {}

    @abstractmethod
    def restore(self) -> list[str]:
        """Put back what the site changed (after offlab-fwd stopped); what failed."""

    def failure(self, failed: list[str]) -> TopologyError:
        """The one error a teardown raises for what failed."""
        return TopologyError("teardown failed: " + "; ".join(failed))


class Middlebox(Topology):
    scenario = "middlebox"

    def __init__(self, mtu: int, params: Params | None = None, site: MiddleboxSite | None = None,
                 **options: object):
        super().__init__(mtu, params, **options)  # type: ignore[arg-type]
        self.path, self.router = choose_path(self.params)
        self.site = site or Namespaces()
        self.site.join(self)
        self.nodes: dict[str, Host] = {}
        self.steps: list[str] = []
        """The build's steps done so far, by name (STEPS), in order."""
        self.forwarder = ForwarderComponent(f"middlebox {self.path.name} via offlab-fwd{self.site.where}",
                                            self.node_core("r"), make=self.site.make_forwarder())

    # --- building: the one sequence --------------------------------------------------

    def _build(self) -> None:
        self._step("nodes", lambda: self.nodes.update(self.site.open()))
        self._step("links", self.site.connect)
        self._step("mtu", self._set_mtus)
        self._step("addresses", self.site.address)
        if self.router == KERNEL:
            self._step("R routes", self.site.route)
        else:
            self._step("R bridges", self.site.bridge)
        self._step("ends", self.site.settle_ends)
        self._step("steering", self.site.steer)

    def _step(self, name: str, do: Callable[[], object]) -> None:
        do()
        self.steps.append(name)

    def _set_mtus(self) -> None:
        for node, device in self.site.ends():
            self.site.before_mtu(node, device, self.mtu)
            self.set_mtu(self.nodes[node], device, self.mtu)

    # --- the nodes, as the site has them ------------------------------------------------

    def node_host(self, node: str) -> Host:
        return self.nodes[node]

    def node_core(self, node: str) -> int:
        return self.site.node_core(node)

    def node_address(self, node: str, other: str) -> str:
        return self.site.node_address(node, other)

    def router_devices(self) -> tuple[str, str]:
        """R's device toward A and R's device toward B."""
        _, (_, toward_a), (_, toward_b), _ = self.site.ends()
        return toward_a, toward_b

    def _endpoint(self, role: str, node: str, other: str) -> Endpoint:
        """`node` as `other` reaches it."""
        return Endpoint(role, self.node_host(node), self.node_address(node, other), self.node_core(node))

    @property
    def sender(self) -> Endpoint:
        return self._endpoint("sender", self.path.sender, self.path.receiver)

    @property
    def receiver(self) -> Endpoint:
        return self._endpoint("receiver", self.path.receiver, self.path.sender)

    @property
    def roles(self) -> dict[str, int]:
        roles = {"sender": self.node_core(self.path.sender), "receiver": self.node_core(self.path.receiver)}
        if self.path.forwarded:
            roles["forwarder"] = self.node_core("r")
        return roles

    def offload_interfaces(self) -> list[Interface]:
        r = self.node_host("r")
        return [Interface(ROUTER_SIDE, r, device, baseline=self.site.baseline(device))
                for device in self.router_devices()]

    # --- R as offlab-fwd ----------------------------------------------------------------

    def _router_ports(self, setting: DatapathSetting) -> dict[str, PortSpec]:
        """offlab-fwd's AF_PACKET ports on R: toward "a" and toward "b"."""
        toward_a, toward_b = self.router_devices()
        namespace = self.site.router_namespace()
        return {"a": PortSpec("packet", toward_a, namespace, setting.port("a").offloads),
                "b": PortSpec("packet", toward_b, namespace, setting.port("b").offloads)}

    def apply_datapath(self, setting: DatapathSetting | None) -> dict[str, dict[str, FeatureState]]:
        if self.router == KERNEL:
            return super().apply_datapath(setting)
        if setting is None or not setting.forwarder:
            raise TopologyError("the middlebox with R as offlab-fwd needs the forwarder's setting")
        self.forwarder.start(setting, self._router_ports(setting))
        return self.forwarder.state(setting)

    def datapath_counters(self) -> dict[str, float]:
        return self.forwarder.counters()

    # --- what the runner reads ----------------------------------------------------------

    @property
    def role_hosts(self) -> dict[str, str]:
        if not self.site.apart:
            return {}
        found = {"sender": self.path.sender, "receiver": self.path.receiver}
        return {**found, "forwarder": "r"} if self.path.forwarded else found

    def cpu_machines(self) -> dict[str, Host]:
        return dict(self.nodes) if self.site.apart else super().cpu_machines()

    def counter_hosts(self) -> dict[str, Host]:
        return dict(self.nodes)

    def nic_interfaces(self) -> dict[str, list[str]]:
        return self.site.nic_interfaces()

    # --- teardown -----------------------------------------------------------------------

    def teardown(self) -> None:
        """offlab-fwd first (its sockets hold R's devices), then the site's restore, then
        the namespaces this topology made (none on servers); one failure keeps no other
        change in place, and all of them are said together."""
        failed = []
        try:
            self.forwarder.stop()
        except Exception as err:  # its process is the nodes' to end (namespace gone, journal)
            failed.append(f"offlab-fwd: {err}")
        failed += self.site.restore()
        try:
            super().teardown()
        except TopologyError as err:
            failed.append(str(err))
        self.nodes.clear()
        if failed:
            raise self.site.failure(failed)


class Namespaces(MiddleboxSite):
    """The three nodes as namespaces of this machine, joined by veths the lab makes and
    addresses (ROUTED for R's kernel, BRIDGED for offlab-fwd as R)."""

    def ends(self) -> tuple[End, End, End, End]:
        return ("a", AR_A), ("r", AR_R), ("r", RB_R), ("b", RB_B)

    def open(self) -> dict[str, Host]:
        return {node: self.box.add_host(node) for node in NODES}

    def connect(self) -> None:
        a, r, b = (self.box.hosts[node] for node in NODES)
        connect_veth(a, AR_A, r, AR_R)
        connect_veth(r, RB_R, b, RB_B)

    def address(self) -> None:
        links = (("a", "r"), ("r", "a"), ("r", "b"), ("b", "r"))
        for (node, device), (_, faces) in zip(self.ends(), links):
            address = ROUTED[(node, faces)] if self.box.router == KERNEL else BRIDGED.get(node)
            if address is not None:
                self.box.hosts[node].add_address(device, address, PREFIXLEN)

    def node_core(self, node: str) -> int:
        return self.box.receiver_core if node == self.box.path.receiver else self.box.sender_core

    def node_address(self, node: str, other: str) -> str:
        if self.box.router == FWD:
            return BRIDGED[node]
        # `node` as seen by `other`: the address on the link towards it.
        faces = "r" if node != "r" else ("a" if other == "a" else "b")
        return ROUTED[(node, faces)]

    def router_namespace(self) -> str:
        return self.box.hosts["r"].namespace

    def route(self) -> None:
        hosts = self.box.hosts
        hosts["a"].add_route(f"10.203.2.0/{PREFIXLEN}", ROUTED[("r", "a")])
        hosts["b"].add_route(f"10.203.1.0/{PREFIXLEN}", ROUTED[("r", "b")])
        hosts["r"].sysctl("net.ipv4.ip_forward", "1")

    def bridge(self) -> None:
        # R's own kernel stays silent on the segment it bridges (no IPv6 autoconf, no
        # router solicitations the forwarder would carry).
        self.box.hosts["r"].sysctl("net.ipv6.conf.all.disable_ipv6", "1")

    def settle_ends(self) -> None:
        control = OffloadControl()
        for node, device in (self.ends()[0], self.ends()[3]):
            control.set(Interface(node, self.box.hosts[node], device), {name: True for name in TOGGLED})

    def steer(self) -> None:
        if self.box.steer_rx_softirq:
            for node, device in self.ends():
                self.box.steer_receive(self.box.hosts[node], device, self.node_core(node))

    def restore(self) -> list[str]:
        return []  # the namespaces go with the topology's own teardown, devices and all
