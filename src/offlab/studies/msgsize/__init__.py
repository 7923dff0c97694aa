"""Seed 001 (msgsize plan): TCP throughput and CPU against the write size, uni- and
bidirectional, per offload profile; curves with CI bands."""

from __future__ import annotations

from typing import Any, Sequence

from ...records import TrafficSpec
from .. import PlanCheck, Section, Study
from .plan import KEYS, SweepError, expand_traffic, parse


class MessageSizeStudy(Study):
    name = "msgsize"
    keys = KEYS

    def traffic(self, check: PlanCheck, workloads: list[TrafficSpec]) -> list[TrafficSpec]:
        try:
            return expand_traffic(workloads, parse(check.doc))
        except SweepError as err:
            raise check.error(str(err)) from None

    def sections(self, rows: Sequence[Any], report: Any) -> list[Section]:
        from .report import CURVES_INTRO, curve_sets, curve_table
        sections = []
        for curves in curve_sets(rows):
            tables = tuple((f"{curves.scenario} · MTU {curves.mtu}, {panel.label}", curve_table(panel))
                           for panel in curves.panels)
            sections.append(Section(curves.title, CURVES_INTRO, tables, curves.slug))
        return sections

    def charts(self, rows: Sequence[Any]) -> dict[str, bytes]:
        from .report import curve_chart, curve_sets
        return {curves.slug: curve_chart(curves) for curves in curve_sets(rows)}
