"""Scenario topologies. `SCENARIOS` maps a plan's scenario name to its builder; a
builder takes the MTU and the case's topology parameters (`CaseSpec.topology`: a
middlebox's path and router, a DUT layout's direction, an underlay family, a wire)."""

from __future__ import annotations

from ..hosts.naming import our_namespaces, sweep_leftovers
from ..records import Params
from .bare import Bare
from .guests import GuestPath
from .base import Endpoint, Interrupted, TerminationSignals, Topology, TopologyError
from .middlebox import Middlebox
from .vm import builders as vm_builders
from .tunnel import Tunnel, tunnel_scenarios

SCENARIOS: dict[str, type[Topology]] = {
    Bare.scenario: Bare,
    **tunnel_scenarios(),  # vxlan, geneve, gre, gretap, ipip, sit
    Middlebox.scenario: Middlebox,
    **vm_builders(),  # userspace datapath through offlab-fwd: vm2vm, vm2host (+ -vxlan)
    GuestPath.scenario: GuestPath,  # real QEMU guests: path, overlay, backend as parameters
}

TUNNELLED = {name for name, builder in SCENARIOS.items() if builder.tunnel}
DATAPATH = {name for name, builder in SCENARIOS.items() if builder.datapath}

MTU_RANGE = (68, 65535)
"""What a plan may ask (IPv4's minimum, veth's maximum); each device then says whether it
takes it, and an IPv6 underlay needs at least 1280."""
TUNNEL_FEATURES = {name: builder.kind.segmentation for name, builder in SCENARIOS.items()
                   if issubclass(builder, Tunnel)}


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
    "SCENARIOS", "TUNNELLED", "TUNNEL_FEATURES", "DATAPATH", "MTU_RANGE", "build", "Endpoint", "Interrupted",
    "TerminationSignals", "Topology", "TopologyError", "our_namespaces", "sweep_leftovers",
]
