"""Seed 000 (quick, offloads plans): offload sequences on the transmitter and the
receiver over bare links and VXLAN. Its report is the pipeline's own per-group tables
and recommendations, so it adds no section of its own."""

from __future__ import annotations

from ...topology import TUNNELLED
from .. import PlanCheck, Profile, Study, Variant
from .plan import SEQUENCES, custom_profiles, sequence_profiles


class OffloadsStudy(Study):
    name = "offloads"
    keys = frozenset({"sequences", "profiles"})

    def profiles(self, check: PlanCheck, variant: Variant) -> list[Profile]:
        sequences = check.choices("sequences", list(SEQUENCES), default=[])
        chosen = sequence_profiles(sequences, variant.scenario in TUNNELLED)
        chosen += custom_profiles(check.doc.get("profiles", []), check.fail)
        return [Profile(p) for p in chosen]
