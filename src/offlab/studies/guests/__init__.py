"""Real guests (seed 000's VM-to-VM rows, seed 004's QEMU guest on a vhost backend):
QEMU guests on virtio-net, path × overlay × backend × virtio features as topologies;
the report's section says what each guest negotiated and how its CPU was spent."""

from __future__ import annotations

from ..base import PlanCheck, Study, Variant
from .plan import expand_scenarios


class GuestsStudy(Study):
    name = "guests"
    keys = frozenset({"guest_paths", "overlays", "backends", "fwd_modes", "virtio"})

    def scenarios(self, check: PlanCheck, variants: list[Variant]) -> list[Variant]:
        return expand_scenarios(check, variants)
