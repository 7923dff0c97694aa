"""Seed 002 (vxlan plan): the DUT layout — application core and softirq core tables per
direction, generated vs received rates with CPU per unit of rate, the encapsulation
cost against bare, and the article's bar pairs as a chart."""

from __future__ import annotations

from typing import Any, Sequence

from .. import PlanCheck, Section, Study, Variant
from .plan import KEYS, expand

CHART = "dut-study"


class DutLayoutStudy(Study):
    name = "dut"
    keys = KEYS

    def scenarios(self, check: PlanCheck, variants: list[Variant]) -> list[Variant]:
        return expand(check, variants)

    def sections(self, rows: Sequence[Any], report: Any) -> list[Section]:
        # The report modules draw with matplotlib: imported only when a report is written.
        from .report import (DUT_INTRO, dut_cpu_table, dut_rates_table, dut_studies,
                             encapsulation_table)
        studies = dut_studies(rows)
        if not studies:
            return []
        tables = []
        for study in studies:
            tables.append((f"{study.title}: CPU per core", dut_cpu_table(study)))
            tables.append((f"{study.title}: rates and CPU cost", dut_rates_table(study)))
        encapsulation = encapsulation_table(studies)
        if encapsulation is not None:
            tables.append(("Encapsulation cost: received rate against bare", encapsulation))
        return [Section("DUT CPU study (seed 002 shape)", DUT_INTRO, tuple(tables), CHART)]

    def charts(self, rows: Sequence[Any]) -> dict[str, bytes]:
        from .report import dut_chart, dut_studies
        studies = dut_studies(rows)
        return {CHART: dut_chart(studies)} if studies else {}
