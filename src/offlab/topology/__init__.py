"""Scenario topologies. `SCENARIOS` maps a plan's scenario name to its builder; new
scenarios (middlebox, vm2vm, …) add a module and one entry here."""

from __future__ import annotations

from .bare import Bare
from .base import Builder, Host, Interrupted, TerminationSignals, Topology, TopologyError
from .naming import our_namespaces, sweep_leftovers
from .vxlan import Vxlan

SCENARIOS: dict[str, Builder] = {
    Bare.scenario: Bare,
    Vxlan.scenario: Vxlan,
}

TUNNELLED = {name for name, builder in SCENARIOS.items() if getattr(builder, "tunnel", False)}

MTUS = (1500, 9000)


def build(scenario: str, mtu: int, **options: object) -> Topology:
    """The (not yet entered) topology for `scenario`; use it as a context manager."""
    try:
        builder = SCENARIOS[scenario]
    except KeyError:
        raise TopologyError(
            f"unknown scenario {scenario!r}; known: {', '.join(sorted(SCENARIOS))}"
        ) from None
    return builder(mtu, **options)


__all__ = [
    "SCENARIOS", "TUNNELLED", "MTUS", "build", "Host", "Interrupted", "TerminationSignals",
    "Topology", "TopologyError", "our_namespaces", "sweep_leftovers",
]
