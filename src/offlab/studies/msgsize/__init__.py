"""Seed 001 (msgsize plan): TCP throughput and CPU against the write size, uni- and
bidirectional, per offload profile; curves with CI bands."""

from __future__ import annotations

from ...records import TrafficSpec
from ..base import PlanCheck, Study
from .plan import KEYS, SweepError, expand_traffic, parse


class MessageSizeStudy(Study):
    name = "msgsize"
    keys = KEYS

    def traffic(self, check: PlanCheck, workloads: list[TrafficSpec]) -> list[TrafficSpec]:
        try:
            return expand_traffic(workloads, parse(check.doc))
        except SweepError as err:
            raise check.error(str(err)) from None
