"""`middlebox`: A ⇄ R ⇄ B, three namespaces, R routing in its kernel — seed 003's
"Host A — pfSense — Host B" with veth pairs for the two networks.

    A ofl-ar0 10.203.1.1 ─── ofl-ar1 10.203.1.2  R  10.203.2.1 ofl-rb0 ─── ofl-rb1 10.203.2.2 B

One topology per path (see `matrix.Path`): the path decides who sends and who
receives; R forwards (A↔B) or terminates (A↔R, B↔R). The offload matrix is applied to
R's two interfaces only; A's and B's interfaces are put all-on once at build time, as
the seed's hosts kept their defaults (everything on).

Cores, with RPS and pinned NAPI threads (see `Topology.steer_receive`): every node
receives on its own node's core — the sender's node on the sender core, the receiver's
on the receiver core, and R, when it forwards, on the sender core. That is where a veth
forward lands anyway (the receive softirq runs on the CPU that transmitted into the
pair); pinning it makes it the same for every profile, and the CPU table shows it as
the "forwarder" role sharing the sender's core.
"""

from __future__ import annotations

from functools import partial

from pyroute2 import NetNS

from ..matrix import PATHS, Path
from ..offloads import TOGGLED, Interface, OffloadControl
from ..proc import in_netns, run
from .base import Builder, Host, Topology
from .naming import device_name

AR_A, AR_R = device_name("ar0"), device_name("ar1")
RB_R, RB_B = device_name("rb0"), device_name("rb1")
ADDRESSES = {
    ("a", "r"): "10.203.1.1", ("r", "a"): "10.203.1.2",
    ("r", "b"): "10.203.2.1", ("b", "r"): "10.203.2.2",
}
"""(node, neighbour it faces) → the node's address on that link."""
PREFIXLEN = 24
ROUTER_SIDE = "router"
"""Interface side of R's devices: matrix profiles (side "both") reach them."""


class ThreeNodes(Topology):
    """A ⇄ R ⇄ B: the three namespaces, the two veth links, the end hosts' offloads (all
    on) and every node's receive steering. Shared by the kernel-routed middlebox and
    the one with offlab-fwd as R; they differ in addressing and in what R runs."""

    path: Path
    ns: dict[str, str]

    def _address(self, node: str, faces: str) -> str | None:
        """The node's address on its link towards `faces`; None leaves it unaddressed."""
        raise NotImplementedError

    def _build_nodes(self) -> None:
        for node in ("a", "r", "b"):
            self.ns[node] = self.add_namespace(node)
        self._link("a", AR_A, "r", AR_R)
        self._link("r", RB_R, "b", RB_B)

    def _prepare_ends(self) -> None:
        control = OffloadControl(run)
        for node, device in (("a", AR_A), ("b", RB_B)):
            control.set(Interface(node, self.ns[node], device), {name: True for name in TOGGLED})
        if self.steer_rx_softirq:
            for node, device in (("a", AR_A), ("r", AR_R), ("r", RB_R), ("b", RB_B)):
                self.steer_receive(self.ns[node], device, self.node_core(node))

    def _link(self, left: str, left_dev: str, right: str, right_dev: str) -> None:
        with NetNS(self.ns[left]) as ns:
            # The peer is created directly in its namespace, never in the root one.
            ns.link("add", ifname=left_dev, kind="veth",
                    peer={"ifname": right_dev, "net_ns_fd": self.ns[right]})
        for node, device, faces in ((left, left_dev, right), (right, right_dev, left)):
            address = self._address(node, faces)
            with NetNS(self.ns[node]) as ns:
                index = ns.link_lookup(ifname=device)[0]
                ns.link("set", index=index, mtu=self.mtu)
                if address is not None:
                    ns.addr("add", index=index, address=address, prefixlen=PREFIXLEN)
                ns.link("set", index=index, state="up")

    def node_core(self, node: str) -> int:
        """The core a node's receive processing (and its iperf3, if any) runs on."""
        if node == self.path.receiver:
            return self.receiver_core
        return self.sender_core


class Middlebox(ThreeNodes):
    scenario = "middlebox"

    def __init__(self, mtu: int, *, path: Path, **options: object):
        super().__init__(mtu, **options)  # type: ignore[arg-type]
        self.path = path
        self.scenario = path.scenario  # type: ignore[misc]
        self.ns: dict[str, str] = {}

    def _build(self) -> None:
        self._build_nodes()
        self._route("a", "10.203.2.0", ADDRESSES[("r", "a")])
        self._route("b", "10.203.1.0", ADDRESSES[("r", "b")])
        run(in_netns(self.ns["r"], ["sysctl", "-q", "-w", "net.ipv4.ip_forward=1"]))
        self._prepare_ends()

    def _address(self, node: str, faces: str) -> str | None:
        return ADDRESSES[(node, faces)]

    def _route(self, node: str, network: str, gateway: str) -> None:
        with NetNS(self.ns[node]) as ns:
            ns.route("add", dst=f"{network}/{PREFIXLEN}", gateway=gateway)

    def _host(self, role: str, node: str, other: str) -> Host:
        """`node` as seen by `other`: the address on the link towards it (for A↔B,
        the address on the node's only link)."""
        faces = "r" if node != "r" else ("a" if other == "a" else "b")
        return Host(role, self.ns[node], ADDRESSES[(node, faces)], self.node_core(node))

    @property
    def sender(self) -> Host:
        return self._host("sender", self.path.sender, self.path.receiver)

    @property
    def receiver(self) -> Host:
        return self._host("receiver", self.path.receiver, self.path.sender)

    @property
    def roles(self) -> dict[str, int]:
        roles = super().roles
        if self.path.forwarded:
            roles["forwarder"] = self.node_core("r")
        return roles

    def offload_interfaces(self) -> list[Interface]:
        return [Interface(ROUTER_SIDE, self.ns["r"], AR_R), Interface(ROUTER_SIDE, self.ns["r"], RB_R)]


def builders() -> dict[str, Builder]:
    """One scenario name per router and path: `middlebox-ab` … `middlebox-rb` with R
    routing in its kernel, `middlebox-fwd-ab`, `middlebox-fwd-ba` with R as offlab-fwd."""
    from .middlebox_fwd import builders as fwd_builders  # it imports this module's names
    return {**{path.scenario: partial(Middlebox, path=path) for path in PATHS.values()},
            **fwd_builders()}
