"""Scenario topologies. `SCENARIOS` maps a plan's scenario name to its builder; new
scenarios (middlebox, vm2vm, …) add a module and one entry here."""

from __future__ import annotations

from .bare import Bare
from .base import Builder, Host, Interrupted, TerminationSignals, Topology, TopologyError
from .dut import dut_variants
from .naming import our_namespaces, sweep_leftovers
from .middlebox import builders as middlebox_builders
from .vxlan import Vxlan
from .vm import builders as vm_builders

SCENARIOS: dict[str, Builder] = {
    Bare.scenario: Bare,
    Vxlan.scenario: Vxlan,
    **middlebox_builders(),
    **vm_builders(),  # userspace datapath through offlab-fwd: vm2vm, vm2host (+ -vxlan)
}

DUT_LAYOUTS: dict[str, Builder] = dut_variants(Bare, Vxlan)
"""Seed-002 layouts "<scenario>-dut-rcv/-snd", chosen by a plan's `dut` key (sweep.py)."""

TUNNELLED = {name for name, builder in {**SCENARIOS, **DUT_LAYOUTS}.items()
             if getattr(builder, "tunnel", False)}
DATAPATH = {name for name, builder in SCENARIOS.items() if getattr(builder, "datapath", False)}

MTUS = (1500, 9000)


def build(scenario: str, mtu: int, **options: object) -> Topology:
    """The (not yet entered) topology for `scenario`; use it as a context manager."""
    try:
        builder = SCENARIOS[scenario] if scenario in SCENARIOS else DUT_LAYOUTS[scenario]
    except KeyError:
        raise TopologyError(
            f"unknown scenario {scenario!r}; known: {', '.join(sorted(SCENARIOS))}"
        ) from None
    return builder(mtu, **options)


__all__ = [
    "SCENARIOS", "DUT_LAYOUTS", "TUNNELLED", "MTUS", "build", "Host", "Interrupted", "TerminationSignals",
    "Topology", "TopologyError", "our_namespaces", "sweep_leftovers",
]
