"""`bare`: two hosts as two namespaces joined by a veth pair — the seed's baseline
physical scenario, with the veth standing in for the NIC pair.

Topology parameters:
* `dut` ("rcv"/"snd"): seed 002's DUT layout (see dut.py) instead of one core per host.
"""

from __future__ import annotations

from ..hosts.naming import device_name
from ..offloads import Interface
from .base import Endpoint, Topology
from .dut import DutLayout

TX_DEV = device_name("v0")
RX_DEV = device_name("v1")
TX_ADDR = "10.201.0.1"
RX_ADDR = "10.201.0.2"
PREFIXLEN = 24


class Bare(Topology):
    scenario = "bare"

    def __init__(self, mtu: int, params=None, **options: object):
        super().__init__(mtu, params, **options)  # type: ignore[arg-type]
        self.dut = DutLayout.of(self.params, self)

    def _build(self) -> None:
        self.tx = self.add_host("tx")
        self.rx = self.add_host("rx")
        self.link(self.tx, TX_DEV, self.rx, RX_DEV, (TX_ADDR, RX_ADDR), PREFIXLEN)
        if self.steer_rx_softirq:
            # Each host receives on its own core: data on the receiver's, ACKs on the sender's.
            self.steer_receive(self.rx, RX_DEV, self.receiver_core)
            self.steer_receive(self.tx, TX_DEV, self.sender_core)

    def _addresses(self) -> tuple[str, str]:
        return TX_ADDR, RX_ADDR

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

    def offload_interfaces(self) -> list[Interface]:
        return [Interface("tx", self.tx, TX_DEV), Interface("rx", self.rx, RX_DEV)]
