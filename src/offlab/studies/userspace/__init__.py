"""Seed 004 (userspace plan): VM paths through offlab-fwd — no GRO / kernel GRO /
engine GRO, no GSO / kernel GSO / engine GSO / TSO pass-through, against a direct
veth pair."""

from __future__ import annotations

from ...topology import DATAPATH
from ..base import PlanCheck, Profile, Study, Variant
from .plan import STUDIES, study_profiles


class UserspaceStudy(Study):
    name = "userspace"
    keys = frozenset({"datapath"})

    def scenarios(self, check: PlanCheck, variants: list[Variant]) -> list[Variant]:
        if check.choices("datapath", list(STUDIES), default=[]):
            plain = [v.scenario for v in variants if v.scenario not in DATAPATH]
            if plain:
                raise check.fail("datapath", f"scenarios {plain} have no userspace datapath; "
                                             f"use {sorted(DATAPATH)}")
        return variants

    def profiles(self, check: PlanCheck, variant: Variant) -> list[Profile]:
        return study_profiles(check.choices("datapath", list(STUDIES), default=[]))
