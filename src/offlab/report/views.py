"""The seed-shaped views a run may call for, beside the per-group results: message-size
curves (seed 001) and DUT tables (seed 002). Each view is a title, an introduction,
an optional chart and captioned tables, so Markdown and HTML render them alike."""

from __future__ import annotations

from dataclasses import dataclass

from .curves import curve_chart, curve_sets, curve_table
from .document import ReportModel
from .dut import dut_chart, dut_cpu_table, dut_rates_table, dut_studies, encapsulation_table
from .model import ProfileRow
from .tables import Table
from .adaptive import adaptive_sections
from .middlebox import middlebox_sections
from .userspace import userspace_sections

CURVES_INTRO = (
    "TCP stream against the write size (iperf3 -l), one line per offload profile, "
    "shaded 95% CI (Student t) over the runs. CPU % is summed over both cores and "
    "divided by the throughput (bidirectional: both directions together). "
    "Table cells are mean±std; the last columns give all-on's throughput over each "
    "other profile's (the seed's TOE-to-NIC ratio)."
)
DUT_INTRO = (
    "DUT layout: the DUT's application pinned to one core (App), its softirq work "
    "steered to the other (S-IRQ); the traffic generator shares the App core (see "
    "docs/methodology.md, “DUT layout”). Cells are mean±std over the runs, as in the article."
)


@dataclass(frozen=True)
class View:
    title: str
    intro: str
    chart: str | None
    """Slug of the view's chart (a key of `view_charts`), if it has one."""
    tables: tuple[tuple[str, Table], ...]
    """(caption, table)."""


def _rows(model: ReportModel) -> list[ProfileRow]:
    """Every measured profile once (a shared baseline appears in several groups)."""
    seen: dict[str, ProfileRow] = {}
    for group in model.groups:
        for row in group.rows:
            seen.setdefault(row.case.key, row)
    return list(seen.values())


def seed_views(model: ReportModel) -> tuple[View, ...]:
    views = []
    for curves in curve_sets(_rows(model)):
        tables = tuple((f"{curves.scenario} · MTU {curves.mtu}, {panel.label}", curve_table(panel))
                       for panel in curves.panels)
        views.append(View(curves.title, CURVES_INTRO, curves.slug, tables))
    studies = dut_studies(_rows(model))
    if studies:
        tables = []
        for study in studies:
            tables.append((f"{study.title}: CPU per core", dut_cpu_table(study)))
            tables.append((f"{study.title}: rates and CPU cost", dut_rates_table(study)))
        encapsulation = encapsulation_table(studies)
        if encapsulation is not None:
            tables.append(("Encapsulation cost: received rate against bare", encapsulation))
        views.append(View("DUT CPU study (seed 002 shape)", DUT_INTRO, "dut-study", tuple(tables)))
    # Middlebox tables (seed 003) and the adaptive-repetition outcomes: no chart.
    for title, intro, tables in middlebox_sections(_rows(model), model.adaptive) + \
            adaptive_sections(model.adaptive):
        views.append(View(title, intro, None, tables))
    for title, intro, tables in userspace_sections(_rows(model)):  # seed 004 on offlab-fwd
        views.append(View(title, intro, None, tables))
    return tuple(views)


def view_charts(model: ReportModel) -> dict[str, bytes]:
    """slug → PNG of every view that has a chart."""
    charts = {curves.slug: curve_chart(curves) for curves in curve_sets(_rows(model))}
    studies = dut_studies(_rows(model))
    if studies:
        charts["dut-study"] = dut_chart(studies)
    return charts
