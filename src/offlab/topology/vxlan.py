"""`vxlan`: the bare veth pair as underlay, a VXLAN tunnel (VNI 42, UDP 4789) on top,
traffic between the inner addresses. The inner MTU is the underlay MTU minus the 50 B
of outer Ethernet + IPv4 + UDP + VXLAN headers, so the outer frames fit the underlay."""

from __future__ import annotations

from ..hosts.naming import device_name
from ..offloads import Interface
from .bare import RX_ADDR, RX_DEV, TX_ADDR, TX_DEV, Bare

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
        ends = ((self.tx, TX_DEV, TX_VXLAN, TX_ADDR, RX_ADDR, TX_INNER),
                (self.rx, RX_DEV, RX_VXLAN, RX_ADDR, TX_ADDR, RX_INNER))
        for host, under, device, local, remote, inner in ends:
            host.add_vxlan(device, VNI, local, remote, DSTPORT, underlay=under)
            host.set_link(device, mtu=self.inner_mtu)
            host.add_address(device, inner, 24)

    def _addresses(self) -> tuple[str, str]:
        return TX_INNER, RX_INNER

    def offload_interfaces(self) -> list[Interface]:
        # Both the tunnel device and its underlay, as the seed toggled them: the
        # tunnel segmentation offload (tx-udp_tnl-segmentation) lives on the underlay.
        return [
            Interface("tx", self.tx, TX_VXLAN), Interface("tx", self.tx, TX_DEV),
            Interface("rx", self.rx, RX_VXLAN), Interface("rx", self.rx, RX_DEV),
        ]
