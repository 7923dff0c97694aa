"""The report as Markdown: tables in the seeds' shape, charts as PNG files beside it."""

from __future__ import annotations

from typing import Mapping

from .document import ReportModel
from .forest import CAPTION as FOREST_CAPTION, SLUG as FOREST_SLUG, TITLE as FOREST_TITLE
from .recommend import digest, not_applied_sentence
from .sections import (SET_APART, UNCORRECTED, advice_rule, excluded_sentences, grouped_warnings,
                       headlines, imprecise_keys, no_advice_sentence, rows_by_scenario, run_facts,
                       uncorrected_sentences, what_was_measured)
from .tables import RESULTS_NOTE, cpu_table, offload_matrix, throughput_table
from .timeseries import series_slug
from .page import markdown_table as render_table
from .views import seed_views


def render_markdown(model: ReportModel, chart_paths: Mapping[str, str]) -> str:
    """``chart_paths``: group slug → path of its PNG relative to the Markdown file."""
    parts = [
        f"# offlab report — {model.info.plan} (run {model.info.run_id})",
        _forest(chart_paths),
        render_table(run_facts(model)),
        _measured(model),
        _summary(model),
        _recommendations(model),
        _warnings(model),
        "## Results",
        RESULTS_NOTE,
    ]
    for group in model.groups:
        parts.append(f"### {group.title}")
        if group.slug in chart_paths:
            parts.append(f"![{group.title}]({chart_paths[group.slug]})")
        if series_slug(group) in chart_paths:
            parts.append(f"![{group.title}: throughput over time]({chart_paths[series_slug(group)]})")
        parts.append(render_table(throughput_table(group, imprecise_keys(model))))
        parts.append(f"CPU per role, % of its core, mean±std over runs:\n\n"
                     f"{render_table(cpu_table(group))}")
    parts.extend(_views(model, chart_paths))
    parts.append(_appendix(model))
    return "\n\n".join(p for p in parts if p) + "\n"


def _forest(chart_paths: Mapping[str, str]) -> str:
    """A link to the forest plot of every effect (shown at the top of report.html)."""
    if FOREST_SLUG not in chart_paths:
        return ""
    return (f"**[{FOREST_TITLE}]({chart_paths[FOREST_SLUG]})** — every offload's effect on throughput "
            f"and CPU per Gbit/s with its 95 % CI, per scenario and traffic (also at the top of "
            f"report.html). {FOREST_CAPTION}")


def _views(model: ReportModel, chart_paths: Mapping[str, str]) -> list[str]:
    """Seed-shaped views (message-size curves, DUT tables), each a section."""
    parts = []
    for view in seed_views(model):
        parts += [f"## {view.title}", view.intro]
        if view.chart in chart_paths:
            parts.append(f"![{view.title}]({chart_paths[view.chart]})")
        parts += [f"{caption}:\n\n{render_table(table)}" for caption, table in view.tables]
    return parts


def _measured(model: ReportModel) -> str:
    lines = what_was_measured(model)
    if not lines:
        return ""
    return "## What was measured\n\n" + "\n".join(f"- {line}" for line in lines)


def _summary(model: ReportModel) -> str:
    lines = headlines(model)
    if not lines:
        return ""
    return "## Summary\n\n" + "\n".join(f"- {line}" for line in lines)


def _recommendations(model: ReportModel) -> str:
    rec = model.recommendations
    out = ["## Recommendations", advice_rule(model)]
    empty = no_advice_sentence(model)
    if empty:
        out.append(empty)
    for title, effects in rec.goals:
        out.append(f"### {title}\n\n**{digest(effects)}.**\n\n"
                   + "\n".join(f"- {e.sentence()}" for e in effects))
    if rec.contradictions:
        out.append("### Contradictory results\n\n"
                   + "\n".join(f"- {c.sentence()}" for c in rec.contradictions))
    for heading, lines in ((UNCORRECTED, uncorrected_sentences(model)),
                           *((h, excluded_sentences(model, kind)) for h, kind in SET_APART)):
        if lines:
            out.append(f"### {heading}\n\n" + "\n".join(f"- {line}" for line in lines))
    if rec.no_effect:
        out.append("### No measurable effect here\n\n"
                   + "\n".join(f"- {n.sentence()}" for n in rec.no_effect))
    if rec.not_applied:
        out.append("### Requested but not in force\n\n"
                   + "\n".join(f"- {not_applied_sentence(s)}" for s in rec.not_applied))
    return "\n\n".join(out)


def _warnings(model: ReportModel) -> str:
    groups = grouped_warnings(model.warnings)
    if not groups:
        return "## Warnings\n\nNone."
    out = ["## Warnings"]
    for group in groups:
        lines = [f"### {group.title} ({len(group.items)})"]
        if group.advice:
            lines.append(f"*Advice:* {group.advice}\n")
            lines += [f"- {w.message}" for w in group.items]
        else:
            lines += [f"- {w.message} — *{w.advice}*" for w in group.items]
        out.append("\n".join(lines))
    return "\n\n".join(out)


def _appendix(model: ReportModel) -> str:
    out = ["## Appendix: environment and offload state in force"]
    info = model.info
    if info.tool_versions:
        out.append("\n".join(f"- {k}: {v}" for k, v in sorted(info.tool_versions.items())))
    out.append(f"Command line: `{info.command_line}`")
    for title, rows in rows_by_scenario(model).items():
        table = offload_matrix(rows)
        if table.rows:
            out.append(f"### Offloads in force: {title}\n\n{render_table(table)}")
    return "\n\n".join(out)
