"""`vxlan`: the bare veth pair as underlay, a VXLAN tunnel (VNI 42, UDP 4789) on top,
traffic between the inner addresses. The inner MTU is the underlay MTU minus the 50 B
of outer Ethernet + IPv4 + UDP + VXLAN headers, so the outer frames fit the underlay."""

from __future__ import annotations

from pyroute2 import NetNS

from ..offloads import Interface
from .bare import RX_ADDR, RX_DEV, TX_ADDR, TX_DEV, Bare
from .base import Host
from .naming import device_name

VNI = 42
DSTPORT = 4789
OVERHEAD = 50
TX_VXLAN = device_name("vx0")
RX_VXLAN = device_name("vx1")
TX_INNER = "10.202.0.1"
RX_INNER = "10.202.0.2"


class Vxlan(Bare):
    scenario = "vxlan"
    tunnel = True

    @property
    def inner_mtu(self) -> int:
        return self.mtu - OVERHEAD

    def _build(self) -> None:
        super()._build()
        ends = (
            (self.tx_ns, TX_DEV, TX_VXLAN, TX_ADDR, RX_ADDR, TX_INNER),
            (self.rx_ns, RX_DEV, RX_VXLAN, RX_ADDR, TX_ADDR, RX_INNER),
        )
        for namespace, under, device, local, remote, inner in ends:
            with NetNS(namespace) as ns:
                under_index = ns.link_lookup(ifname=under)[0]
                ns.link("add", ifname=device, kind="vxlan", vxlan_id=VNI, vxlan_link=under_index,
                        vxlan_local=local, vxlan_group=remote, vxlan_port=DSTPORT)
                index = ns.link_lookup(ifname=device)[0]
                ns.link("set", index=index, mtu=self.inner_mtu)
                ns.addr("add", index=index, address=inner, prefixlen=24)
                ns.link("set", index=index, state="up")

    @property
    def sender(self) -> Host:
        return Host("sender", self.tx_ns, TX_INNER, self.sender_core)

    @property
    def receiver(self) -> Host:
        return Host("receiver", self.rx_ns, RX_INNER, self.receiver_core)

    def offload_interfaces(self) -> list[Interface]:
        # Both the tunnel device and its underlay, as the seed toggled them: the
        # tunnel segmentation offload (tx-udp_tnl-segmentation) lives on the underlay.
        return [
            Interface("tx", self.tx_ns, TX_VXLAN), Interface("tx", self.tx_ns, TX_DEV),
            Interface("rx", self.rx_ns, RX_VXLAN), Interface("rx", self.rx_ns, RX_DEV),
        ]
