"""The DUT layout key of a plan (seed 002): `dut = ["rcv", "snd"]` runs every scenario
with one host as the device under test — its application on one core, its softirq
work on the other — once receiving the generator's traffic and once sending to it.
The direction is the topology parameter `dut`; the variant's label is
"<scenario>-dut-<direction>" for people."""

from __future__ import annotations

from typing import Any

from ..base import PlanCheck, Variant

KEYS = frozenset({"dut"})
DUT_DIRECTIONS = ("rcv", "snd")
"""The DUT receives the generator's traffic, or sends it to the generator."""
LAYOUT_SCENARIOS = ("bare", "vxlan")
"""Two-host scenarios whose topology has a DUT layout."""


def directions(check: PlanCheck) -> tuple[str, ...]:
    value: Any = check.doc.get("dut", [])
    if not isinstance(value, list) or len(set(map(str, value))) != len(value):
        raise check.fail("dut", f"{value!r} must be a list of 'rcv' and/or 'snd', each once")
    for direction in value:
        if direction not in DUT_DIRECTIONS:
            raise check.fail("dut", f"{direction!r} is not known; use 'rcv' and/or 'snd'")
    if value and check.doc.get("steer_rx_softirq", True) is False:
        raise check.fail("dut", "a DUT layout steers the DUT's softirq to its own core; "
                                "remove steer_rx_softirq = false or the dut key")
    return tuple(value)


def expand(check: PlanCheck, variants: list[Variant]) -> list[Variant]:
    """Each variant once per DUT direction (none: the variants as they are)."""
    chosen = directions(check)
    if not chosen:
        return variants
    out = []
    for variant in variants:
        if variant.scenario not in LAYOUT_SCENARIOS or "wire" in variant.topology:
            raise check.fail("dut", f"scenario {variant.name!r} has no DUT layout; use it "
                                    f"without the dut key, or {'/'.join(LAYOUT_SCENARIOS)}")
        out += [Variant(variant.scenario, variant.topology.with_(dut=d), f"{variant.name}-dut-{d}")
                for d in chosen]
    return out
