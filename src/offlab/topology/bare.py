"""`bare`: two hosts as two namespaces joined by a veth pair — the seed's baseline
physical scenario, with the veth standing in for the NIC pair.

Topology parameters:
* `dut` ("rcv"/"snd"): seed 002's DUT layout (see dut.py) instead of one core per host.
* `underlay` ("ipv4", default, or "ipv6"): the veth pair's addressing, and so the
  family traffic (or a tunnel's outer packets) travels in.
* `vlan` (1–4094): the link's addresses sit on an 802.1Q device over each veth end.
* `wire`: what the receiver's device gets. A veth passes the sender's 64 KiB TSO/GSO
  super-packets to the receiver whole, and runs its NAPI/GRO receive path only when the
  sending device has no TSO, so on veth's own wire the receive path flips with the
  sender's TSO setting — no NIC pair does that. Two wires deliver MTU-sized frames, as
  a NIC pair does:
  - "mtu" (the receiver sequences): the sender's segmentation offloads are held off (GSO
    stays on: the sending stack segments each super-packet in software just before the
    wire), the same for every receiver profile;
  - "nic" (the transmitter sequences, whose variable is the sender's TSO): the sender
    keeps what its profile asks, and the hosts are joined through a wire namespace
    (`ofl-<pid>-wire`, a bridge between two veths) whose device towards the receiver
    has no TSO: the same software segmentation (GSO) as the "mtu" wire, done where a
    NIC would do it. The wire's work (bridging, segmenting) is steered to the
    receiver's core, so the sender's core carries only the sender's own work; its queue
    towards the receiver holds a receive window of MTU frames (`wire_queue_frames`), so
    it drops for no TSO profile.
  - "veth-superpackets" (or no `wire`): veth's own wire, super-packets whole.
"""

from __future__ import annotations

from ..hosts.naming import RX_DEV, TX_DEV, WIRE_RX, WIRE_TX, device_name
from ..hosts import Host
from ..hosts.offloads import GRO, TSO, Interface
from .base import Endpoint, Topology, TopologyError
from .dut import DutLayout

TX_ADDR = "10.201.0.1"
RX_ADDR = "10.201.0.2"
PREFIXLEN = 24
UNDERLAYS = {"ipv4": (TX_ADDR, RX_ADDR, PREFIXLEN), "ipv6": ("fd00:201::1", "fd00:201::2", 64)}
WIRES = ("mtu", "nic", "veth-superpackets")
MTU_WIRE_SENDER = {TSO: False, "tx-udp-segmentation": False}
WIRE_BRIDGE = device_name("wbr")
NIC_WIRE_DEVICE = {TSO: False, "tx-udp-segmentation": False, GRO: False}
"""What the wire's devices hold: no TSO/USO (so GSO segments to MTU frames before the
receiver) and no GRO (so the wire merges nothing back, and veth gives them no NAPI:
whatever the sender sends, the wire takes it by the same backlog path)."""
"""What the sender's devices hold off for the MTU wire (tx-tcp-segmentation and the
other TSO features follow tcp-segmentation-offload)."""


TCP_RMEM = "/proc/sys/net/ipv4/tcp_rmem"
"""The receiver namespace's TCP receive buffer bounds (min default max, bytes)."""


def wire_queue_frames(rmem_max: int, mtu: int) -> int:
    """The queue (txqueuelen, packets) of the NIC wire's device towards the receiver: room
    for the receiver's largest TCP window in MTU frames, so that no TCP profile overflows
    it. The qdisc counts packets, and it holds what the sender sent: 64 KiB super-packets
    with TSO on (segmented after the queue), MTU frames with it off. At veth's default
    1000 packets that is 64 MB against 1.5 MB, so with TSO off the queue overflowed at
    the wire (3.4 % of segments dropped and retransmitted in the quick plan's bare case)
    while with TSO on it never could: the loss, not the offload, set TSO-off's rate. A
    window never exceeds the receive buffer, so a queue this long never drops in either;
    twice the frames, since a tunnel's frames carry less payload than their MTU."""
    return max(1000, 2 * -(-rmem_max // mtu))


def underlay_addresses(underlay: str) -> tuple[str, str, int]:
    return UNDERLAYS[underlay]


class Bare(Topology):
    scenario = "bare"

    def __init__(self, mtu: int, params=None, **options: object):
        super().__init__(mtu, params, **options)  # type: ignore[arg-type]
        self.dut = DutLayout.of(self.params, self)
        self.wire = self.params.get("wire")
        if self.wire is not None and self.wire not in WIRES:
            raise TopologyError(f"wire {self.wire!r}: use \"mtu\", \"nic\" or \"veth-superpackets\"")
        self.underlay = str(self.params.get("underlay", "ipv4"))
        if self.underlay not in UNDERLAYS:
            raise TopologyError(f"underlay {self.underlay!r}: use \"ipv4\" or \"ipv6\"")
        vlan = self.params.get("vlan")
        self.vlan = int(vlan) if vlan is not None else None

    def _sender_pinned(self, underlay: bool = False) -> dict[str, bool]:
        """Features the MTU wire holds on a sender device (and the tunnel's
        segmentation offloads on its underlay)."""
        if self.wire != "mtu":
            return {}
        tunnel = {f: False for f in self.tunnel_segmentation()} if underlay else {}
        return {**MTU_WIRE_SENDER, **tunnel}

    def tunnel_segmentation(self) -> tuple[str, ...]:
        """The underlay's segmentation offloads of this scenario's tunnel (none here)."""
        return ()

    def _build(self) -> None:
        self.tx = self.add_host("tx")
        self.rx = self.add_host("rx")
        tx_addr, rx_addr, prefixlen = UNDERLAYS[self.underlay]
        addresses = (tx_addr, rx_addr) if self.vlan is None else (None, None)
        if self.wire == "nic":
            self._nic_wire(addresses, prefixlen)
        else:
            self.link(self.tx, TX_DEV, self.rx, RX_DEV, addresses, prefixlen)
        if self.vlan is not None:
            for host, device, address in ((self.tx, TX_DEV, tx_addr), (self.rx, RX_DEV, rx_addr)):
                self._add_vlan(host, device, address, prefixlen)
        if self.steer_rx_softirq:
            # Each host receives on its own core: data on the receiver's, ACKs on the sender's.
            self.steer_receive(self.rx, RX_DEV, self.receiver_core)
            self.steer_receive(self.tx, TX_DEV, self.sender_core)

    def _nic_wire(self, addresses: tuple[str | None, str | None], prefixlen: int) -> None:
        """sender ⇄ [wire: w0 — bridge — w1] ⇄ receiver. The wire's offloads are set with
        every profile (`offload_interfaces`, side "wire"); here its traffic is steered: what
        reaches w0 (data) is bridged and segmented on the receiver's core, what reaches w1
        (ACKs) on the sender's, by RPS (no NAPI on a device without GRO)."""
        self.wire_host = self.add_host("wire")
        self.link(self.tx, TX_DEV, self.wire_host, WIRE_TX, (addresses[0], None), prefixlen)
        self.link(self.wire_host, WIRE_RX, self.rx, RX_DEV, (None, addresses[1]), prefixlen)
        self.wire_host.ip("link", "add", WIRE_BRIDGE, "type", "bridge")
        for device in (WIRE_TX, WIRE_RX):
            self.wire_host.ip("link", "set", device, "master", WIRE_BRIDGE)
        self.set_mtu(self.wire_host, WIRE_BRIDGE, self.mtu)
        rmem_max = int(self.rx.read_file(TCP_RMEM).split()[2])
        self.wire_host.ip("link", "set", "dev", WIRE_RX, "txqueuelen", str(wire_queue_frames(rmem_max, self.mtu)))
        for device, core in ((WIRE_TX, self.receiver_core), (WIRE_RX, self.sender_core)):
            self.rps(self.wire_host, device, core)

    def _add_vlan(self, host: Host, device: str, address: str, prefixlen: int) -> None:
        """An 802.1Q device on the veth end, carrying the address: the link's traffic
        is tagged, as on a trunk port."""
        tagged = self.underlay_device(device)
        done = host.ip("link", "add", "link", device, "name", tagged, "type", "vlan", "id", str(self.vlan),
                       check=False)
        if done.returncode != 0:
            raise TopologyError(f"vlan {self.vlan}: this kernel cannot make the device "
                                f"({done.stderr.strip()}); it needs CONFIG_VLAN_8021Q")
        self.set_mtu(host, tagged, self.mtu)
        host.add_address(tagged, address, prefixlen)

    def underlay_device(self, device: str) -> str:
        """The device the link's addresses are on: the veth end, or its VLAN device."""
        return device if self.vlan is None else f"{device}q"

    def _addresses(self) -> tuple[str, str]:
        return UNDERLAYS[self.underlay][:2]

    @property
    def sender(self) -> Endpoint:
        core = self.dut.app_core if self.dut else self.sender_core
        return Endpoint("sender", self.tx, self._addresses()[0], core)

    @property
    def receiver(self) -> Endpoint:
        core = self.dut.app_core if self.dut else self.receiver_core
        return Endpoint("receiver", self.rx, self._addresses()[1], core)

    @property
    def roles(self) -> dict[str, int]:
        return self.dut.roles if self.dut else super().roles

    def wire_interfaces(self) -> list[Interface]:
        """The NIC wire's two devices, their features held whatever the profile."""
        if self.wire != "nic":
            return []
        held = {**NIC_WIRE_DEVICE, **{f: False for f in self.tunnel_segmentation()}}
        return [Interface("wire", self.wire_host, device, held) for device in (WIRE_TX, WIRE_RX)]

    def offload_interfaces(self) -> list[Interface]:
        return [Interface("tx", self.tx, TX_DEV, self._sender_pinned()), Interface("rx", self.rx, RX_DEV),
                *self.wire_interfaces()]
