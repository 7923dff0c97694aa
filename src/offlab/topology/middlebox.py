"""`middlebox`: A ⇄ R ⇄ B, three namespaces — seed 003's "Host A — pfSense — Host B"
with veth pairs for the two networks.

    A ofl-ar0 ─── ofl-ar1  R  ofl-rb0 ─── ofl-rb1 B

Topology parameters: `path` (who sends to whom: a-b, b-a, a-r, r-a, b-r, r-b) and
`router`: "kernel" (R routes between two subnets) or "offlab-fwd" (R's veth ends carry no
address; offlab-fwd bridges them with two AF_PACKET ports, so A and B share one
segment; forwarded paths only). The offload matrix is applied to R's two interfaces;
A's and B's are put all-on once at build time, as the seed's hosts kept their defaults.

Cores, with RPS and pinned NAPI threads (see `Topology.steer_receive`): every node
receives on its own node's core — the sender's node on the sender core, the receiver's
on the receiver core, and R, when it forwards, on the sender core. That is where a veth
forward lands anyway (the receive softirq runs on the CPU that transmitted into the
pair); pinning it makes it the same for every profile, and the CPU table shows it as the
"forwarder" role sharing the sender's core (offlab-fwd is pinned there too).
"""

from __future__ import annotations

from dataclasses import dataclass

from .fwd import PortSpec
from ..hosts import Host
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
AR_A, AR_R = device_name("ar0"), device_name("ar1")
RB_R, RB_B = device_name("rb0"), device_name("rb1")
ROUTED = {
    ("a", "r"): "10.203.1.1", ("r", "a"): "10.203.1.2",
    ("r", "b"): "10.203.2.1", ("b", "r"): "10.203.2.2",
}
"""Kernel router: (node, neighbour it faces) → the node's address on that link."""
BRIDGED = {"a": "10.204.0.1", "b": "10.204.0.2"}
"""offlab-fwd as R: A and B on one segment; R's ports carry no address."""
PREFIXLEN = 24
ROUTER_SIDE = "router"
"""Interface side of R's devices: matrix profiles (side "both") reach them."""


class MiddleboxShape:
    """The one middlebox, wherever its three nodes are — here in namespaces (`Middlebox`)
    or on three servers (remote_middlebox.py): the path and R's kind from the topology's
    parameters; the sender, the receiver and the roles' cores by path; R's two devices as
    the offload matrix's interfaces and as offlab-fwd's two bridged ports. Mixed in
    before `Topology`; a subclass builds the nodes and says, node by node, where each is
    (`node_host`), its core and its address, and which of R's devices faces A and B."""

    scenario = "middlebox"
    path: Path
    router: str
    forwarder: ForwarderComponent

    # --- what a subclass says of its nodes ----------------------------------------------

    def node_host(self, node: str) -> Host:
        raise NotImplementedError

    def node_core(self, node: str) -> int:
        """The core a node's receive processing (and its iperf3, if any) runs on."""
        raise NotImplementedError

    def node_address(self, node: str, other: str) -> str:
        """`node`'s address as `other` reaches it."""
        raise NotImplementedError

    def router_devices(self) -> tuple[str, str]:
        """R's device toward A and R's device toward B."""
        raise NotImplementedError

    def router_namespace(self) -> str:
        """The namespace offlab-fwd opens R's devices in ("" on a server: its own)."""
        return ""

    def baseline(self, device: str) -> dict[str, bool] | None:
        """The features R's `device` starts each profile from (None: all on)."""
        return None

    def _choose_path(self, params: Params) -> None:
        path, router = params.get("path"), params.get("router", KERNEL)
        if path not in PATHS or router not in (KERNEL, FWD):
            raise TopologyError(f"middlebox needs path (one of {', '.join(PATHS)}) and router "
                                f"(kernel or offlab-fwd); got {dict(params)}")
        self.path, self.router = PATHS[str(path)], str(router)
        if self.router == FWD and not self.path.forwarded:
            raise TopologyError(f"offlab-fwd as R only forwards; path {self.path.name} ends on R")

    # --- the same wherever the nodes are -------------------------------------------------

    def _endpoint(self, role: str, node: str, other: str) -> Endpoint:
        """`node` as `other` reaches it."""
        return Endpoint(role, self.node_host(node), self.node_address(node, other), self.node_core(node))

    def _router_ports(self, setting: DatapathSetting) -> dict[str, PortSpec]:
        """offlab-fwd's AF_PACKET ports on R: toward "a" and toward "b"."""
        toward_a, toward_b = self.router_devices()
        return {"a": PortSpec("packet", toward_a, self.router_namespace(), setting.port("a").offloads),
                "b": PortSpec("packet", toward_b, self.router_namespace(), setting.port("b").offloads)}

    @property
    def roles(self) -> dict[str, int]:
        roles = {"sender": self.node_core(self.path.sender), "receiver": self.node_core(self.path.receiver)}
        if self.path.forwarded:
            roles["forwarder"] = self.node_core("r")
        return roles

    def offload_interfaces(self) -> list[Interface]:
        r = self.node_host("r")
        return [Interface(ROUTER_SIDE, r, device, baseline=self.baseline(device)) for device in self.router_devices()]

    @property
    def sender(self) -> Endpoint:
        return self._endpoint("sender", self.path.sender, self.path.receiver)

    @property
    def receiver(self) -> Endpoint:
        return self._endpoint("receiver", self.path.receiver, self.path.sender)

    def apply_datapath(self, setting: DatapathSetting | None) -> dict[str, dict[str, FeatureState]]:
        if self.router == KERNEL:
            return super().apply_datapath(setting)  # type: ignore[misc]
        if setting is None or not setting.forwarder:
            raise TopologyError("the middlebox with R as offlab-fwd needs the forwarder's setting")
        self.forwarder.start(setting, self._router_ports(setting))
        return self.forwarder.state(setting)

    def datapath_counters(self) -> dict[str, float]:
        return self.forwarder.counters()


class Middlebox(MiddleboxShape, Topology):
    def __init__(self, mtu: int, params: Params | None = None, **options: object):
        super().__init__(mtu, params, **options)  # type: ignore[arg-type]
        self._choose_path(self.params)
        self.forwarder = ForwarderComponent(f"middlebox {self.path.name} via offlab-fwd", self.sender_core)

    # --- building ---------------------------------------------------------------------

    def _build(self) -> None:
        a, r, b = (self.add_host(node) for node in ("a", "r", "b"))
        self.link(a, AR_A, r, AR_R, (self._address("a", "r"), self._address("r", "a")), PREFIXLEN)
        self.link(r, RB_R, b, RB_B, (self._address("r", "b"), self._address("b", "r")), PREFIXLEN)
        if self.router == KERNEL:
            a.add_route(f"10.203.2.0/{PREFIXLEN}", ROUTED[("r", "a")])
            b.add_route(f"10.203.1.0/{PREFIXLEN}", ROUTED[("r", "b")])
            r.sysctl("net.ipv4.ip_forward", "1")
        else:
            # R's own kernel stays silent on the segment it bridges (no IPv6 autoconf,
            # no router solicitations the forwarder would carry).
            r.sysctl("net.ipv6.conf.all.disable_ipv6", "1")
        control = OffloadControl()
        for node, device in (("a", AR_A), ("b", RB_B)):
            control.set(Interface(node, self.hosts[node], device), {name: True for name in TOGGLED})
        if self.steer_rx_softirq:
            for node, device in (("a", AR_A), ("r", AR_R), ("r", RB_R), ("b", RB_B)):
                self.steer_receive(self.hosts[node], device, self.node_core(node))

    def _address(self, node: str, faces: str) -> str | None:
        if self.router == KERNEL:
            return ROUTED[(node, faces)]
        return BRIDGED.get(node)

    # --- the nodes: three namespaces of this machine -------------------------------------

    def node_host(self, node: str) -> Host:
        return self.hosts[node]

    def node_core(self, node: str) -> int:
        return self.receiver_core if node == self.path.receiver else self.sender_core

    def node_address(self, node: str, other: str) -> str:
        if self.router == FWD:
            return BRIDGED[node]
        # `node` as seen by `other`: the address on the link towards it.
        faces = "r" if node != "r" else ("a" if other == "a" else "b")
        return ROUTED[(node, faces)]

    def router_devices(self) -> tuple[str, str]:
        return AR_R, RB_R

    def router_namespace(self) -> str:
        return self.hosts["r"].namespace

    def teardown(self) -> None:
        """The forwarder first (its sockets hold R's veths), then the namespaces."""
        try:
            self.forwarder.stop()
        finally:
            super().teardown()
