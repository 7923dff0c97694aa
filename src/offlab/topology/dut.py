"""DUT layouts (seed 002): one host is the device under test, the other the traffic
generator. The DUT's application runs on one core ("dut-app") and all of the DUT's
receive softirq work is steered to the other ("dut-softirq"), so a per-core table
shows the application's cost apart from the kernel's packet work, as the article's
"CPU App" / "CPU S-IRQ" rows do.

With two cores the generator has no cores of its own: its application and its
receive processing share the DUT's application core, which keeps the DUT's softirq
core free of anything but the DUT's packet work (the article found that core to be
the bottleneck). "dut rcv": the generator sends, the DUT (the receiver host)
receives; "dut snd": the DUT (the sender host) sends to the generator.

A veth has no interrupt and one tx queue, so the steering is RPS on the DUT's
receiving device plus its threaded NAPI pinned to the softirq core (`Topology.
steer_receive`); XPS and IRQ affinity have nothing to act on here. The layout is the
topology parameter `dut` of a two-host scenario, not a scenario of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping

from .base import TopologyError

if TYPE_CHECKING:
    from .base import Topology

APP_CORE = 0
SOFTIRQ_CORE = 1
DIRECTIONS = ("rcv", "snd")


@dataclass(frozen=True)
class DutLayout:
    direction: str
    app_core: int = APP_CORE
    softirq_core: int = SOFTIRQ_CORE

    @classmethod
    def of(cls, params: Mapping[str, object], topology: "Topology") -> "DutLayout | None":
        """The layout a topology's parameters ask for; it moves the topology's receive
        steering so the DUT receives on the softirq core, the generator on the app core."""
        direction = params.get("dut")
        if direction is None:
            return None
        if direction not in DIRECTIONS:
            raise TopologyError(f"DUT direction {direction!r}: use 'rcv' or 'snd'")
        if not topology.steer_rx_softirq:
            raise TopologyError("a DUT layout needs softirq steering; remove steer_rx_softirq = false")
        layout = cls(str(direction))
        dut_receives = layout.direction == "rcv"
        topology.receiver_core = layout.softirq_core if dut_receives else layout.app_core
        topology.sender_core = layout.app_core if dut_receives else layout.softirq_core
        return layout

    @property
    def roles(self) -> dict[str, int]:
        return {"dut-app": self.app_core, "dut-softirq": self.softirq_core, "generator": self.app_core}
