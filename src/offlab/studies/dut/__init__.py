"""Seed 002 (vxlan plan): the DUT layout — application core and softirq core tables per
direction, generated vs received rates with CPU per unit of rate, the encapsulation
cost against bare, and the article's bar pairs as a chart."""

from __future__ import annotations

from ..base import PlanCheck, Study, Variant
from .plan import KEYS, expand


class DutLayoutStudy(Study):
    name = "dut"
    keys = KEYS

    def scenarios(self, check: PlanCheck, variants: list[Variant]) -> list[Variant]:
        return expand(check, variants)
