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
steer_receive`); XPS and IRQ affinity have nothing to act on here.
"""

from __future__ import annotations

from dataclasses import replace

from .base import Host, Topology, TopologyError

APP_CORE = 0
SOFTIRQ_CORE = 1
ROLES = ("dut-app", "dut-softirq", "generator")


def dut_variant(base: type[Topology], direction: str) -> type[Topology]:
    """`base` (a two-host scenario) in the DUT layout, the DUT receiving ("rcv") or
    sending ("snd"); registered as scenario "<base>-dut-<direction>"."""
    if direction not in ("rcv", "snd"):
        raise ValueError(f"DUT direction {direction!r}: use 'rcv' or 'snd'")
    dut_receives = direction == "rcv"

    class DutLayout(base):  # type: ignore[valid-type, misc]
        scenario = f"{base.scenario}-dut-{direction}"
        dut_direction = direction

        def __init__(self, mtu: int, *, app_core: int = APP_CORE,
                     softirq_core: int = SOFTIRQ_CORE, steer_rx_softirq: bool = True,
                     **options: object):
            if not steer_rx_softirq:
                raise TopologyError(f"{self.scenario}: a DUT layout needs softirq steering; "
                                    "remove steer_rx_softirq = false from the plan")
            # The base topology steers each host's receive path to that host's core:
            # the DUT's to the softirq core, the generator's to the application core.
            dut, generator = softirq_core, app_core
            super().__init__(mtu, receiver_core=dut if dut_receives else generator,
                             sender_core=generator if dut_receives else dut, **options)
            self.app_core = app_core
            self.softirq_core = softirq_core

        @property
        def sender(self) -> Host:
            return replace(super().sender, core=self.app_core)

        @property
        def receiver(self) -> Host:
            return replace(super().receiver, core=self.app_core)

        @property
        def roles(self) -> dict[str, int]:
            return {"dut-app": self.app_core, "dut-softirq": self.softirq_core,
                    "generator": self.app_core}

    DutLayout.__name__ = DutLayout.__qualname__ = f"{base.__name__}Dut{direction.capitalize()}"
    return DutLayout


def dut_variants(*bases: type[Topology]) -> dict[str, type[Topology]]:
    """Scenario name → builder for each base in both directions."""
    variants = (dut_variant(base, d) for base in bases for d in ("rcv", "snd"))
    return {v.scenario: v for v in variants}
