"""The study views a run calls for, beside the per-group results: each study
(report/studies/) contributes its own sections and charts from the report's profile rows —
message-size curves (seed 001), DUT tables (seed 002), middlebox tables (seed 003),
the userspace datapath (seed 004) — and the adaptive-repetition outcomes follow."""

from __future__ import annotations

from .adaptive import adaptive_sections
from .document import ReportModel
from .model import ProfileRow
from .section import Section
from .studies import STUDY_VIEWS
from .attribution import attribution_sections
from .capacity_view import capacity_sections
from .claims import claims_sections
from .drops import drops_sections
from .latency_view import latency_charts, latency_sections
from .stack import stack_sections
from .windows import window_sections

View = Section
"""A titled view with an introduction, an optional chart and captioned tables."""


def _rows(model: ReportModel) -> list[ProfileRow]:
    """Every measured profile once (a shared baseline appears in several groups)."""
    seen: dict[str, ProfileRow] = {}
    for group in model.groups:
        for row in group.rows:
            seen.setdefault(row.case.key, row)
    return list(seen.values())


def seed_views(model: ReportModel) -> tuple[View, ...]:
    rows = _rows(model)
    views = claims_sections(model) + attribution_sections(model)
    views += capacity_sections(rows) + latency_sections(rows) + drops_sections(rows)
    views += window_sections(rows)
    views += [view for study in STUDY_VIEWS for view in study.sections(rows, model)]
    views += [Section(title, intro, tables) for title, intro, tables in adaptive_sections(model.adaptive)]
    views += stack_sections(model.stack)
    return tuple(views)


def view_charts(model: ReportModel) -> dict[str, bytes]:
    """slug → PNG of every view that has a chart."""
    rows = _rows(model)
    charts = latency_charts(rows)
    charts.update({slug: png for study in STUDY_VIEWS for slug, png in study.charts(rows).items()})
    return charts
