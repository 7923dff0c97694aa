"""`bare`: two hosts as two namespaces joined by a veth pair — the seed's baseline
physical scenario, with the veth standing in for the NIC pair."""

from __future__ import annotations

from pyroute2 import NetNS

from ..offloads import Interface
from .base import Host, Topology
from .naming import device_name

TX_DEV = device_name("v0")
RX_DEV = device_name("v1")
TX_ADDR = "10.201.0.1"
RX_ADDR = "10.201.0.2"
PREFIXLEN = 24


class Bare(Topology):
    scenario = "bare"

    def _build(self) -> None:
        self.tx_ns = self.add_namespace("tx")
        self.rx_ns = self.add_namespace("rx")
        with NetNS(self.tx_ns) as ns:
            # The peer is created directly in the receiver's namespace: it never
            # exists in the root namespace, not even for a moment.
            ns.link("add", ifname=TX_DEV, kind="veth", peer={"ifname": RX_DEV, "net_ns_fd": self.rx_ns})
        for namespace, device, address in ((self.tx_ns, TX_DEV, TX_ADDR), (self.rx_ns, RX_DEV, RX_ADDR)):
            with NetNS(namespace) as ns:
                index = ns.link_lookup(ifname=device)[0]
                ns.link("set", index=index, mtu=self.mtu)
                ns.addr("add", index=index, address=address, prefixlen=PREFIXLEN)
                ns.link("set", index=index, state="up")
        if self.steer_rx_softirq:
            # Each host receives on its own core: data on the receiver's, ACKs on the sender's.
            self.steer_receive(self.rx_ns, RX_DEV, self.receiver_core)
            self.steer_receive(self.tx_ns, TX_DEV, self.sender_core)

    @property
    def sender(self) -> Host:
        return Host("sender", self.tx_ns, TX_ADDR, self.sender_core)

    @property
    def receiver(self) -> Host:
        return Host("receiver", self.rx_ns, RX_ADDR, self.receiver_core)

    def offload_interfaces(self) -> list[Interface]:
        return [Interface("tx", self.tx_ns, TX_DEV), Interface("rx", self.rx_ns, RX_DEV)]
