"""Scenario topologies. `SCENARIOS` maps a plan's scenario name to its builder; a
builder takes the MTU and the case's topology parameters (`CaseSpec.topology`: a
middlebox's path and router, a DUT layout's direction)."""

from __future__ import annotations

from ..hosts.naming import our_namespaces, sweep_leftovers
from ..records import Params
from .bare import Bare
from .base import Endpoint, Interrupted, TerminationSignals, Topology, TopologyError
from .middlebox import Middlebox
from .vm import builders as vm_builders
from .vxlan import Vxlan

SCENARIOS: dict[str, type[Topology]] = {
    Bare.scenario: Bare,
    Vxlan.scenario: Vxlan,
    Middlebox.scenario: Middlebox,
    **vm_builders(),  # userspace datapath through offlab-fwd: vm2vm, vm2host (+ -vxlan)
}

TUNNELLED = {name for name, builder in SCENARIOS.items() if builder.tunnel}
DATAPATH = {name for name, builder in SCENARIOS.items() if builder.datapath}

MTUS = (1500, 9000)


def build(scenario: str, mtu: int, topology: Params | None = None, **options: object) -> Topology:
    """The (not yet entered) topology for `scenario`; use it as a context manager."""
    try:
        builder = SCENARIOS[scenario]
    except KeyError:
        raise TopologyError(
            f"unknown scenario {scenario!r}; known: {', '.join(sorted(SCENARIOS))}"
        ) from None
    return builder(mtu, topology or Params(), **options)


__all__ = [
    "SCENARIOS", "TUNNELLED", "DATAPATH", "MTUS", "build", "Endpoint", "Interrupted",
    "TerminationSignals", "Topology", "TopologyError", "our_namespaces", "sweep_leftovers",
]
