"""Seed 003 (middlebox plan): A ⇄ R ⇄ B, the checksum × TSO × GRO matrix on R, the
forwarded and terminated paths, R as the kernel or as offlab-fwd."""

from __future__ import annotations

from dataclasses import replace
from ...records import CaseSpec
from ..base import PlanCheck, Profile, Study, Variant
from .forwarder import fwd_settings
from .plan import DIMENSIONS, FWD, combination, expand_scenarios, matrix_profiles

ALL_ON = {d: True for d in DIMENSIONS}
"""A profile that is no matrix combination runs the forwarder as all-on does."""


class MiddleboxStudy(Study):
    name = "middlebox"
    keys = frozenset({"paths", "matrix", "router"})

    def scenarios(self, check: PlanCheck, variants: list[Variant]) -> list[Variant]:
        return expand_scenarios(check, variants)

    def profiles(self, check: PlanCheck, variant: Variant) -> list[Profile]:
        dims = check.choices("matrix", list(DIMENSIONS), default=[])
        return matrix_profiles(dims) if dims else []

    def finish(self, case: CaseSpec) -> CaseSpec:
        """With R as offlab-fwd, the forwarder's setting is the combination's."""
        if case.topology.get("router") != FWD:
            return case
        combo = combination(case.params) or ALL_ON
        return replace(case, datapath=fwd_settings(combo).datapath())
