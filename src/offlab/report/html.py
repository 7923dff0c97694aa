"""The report as one self-contained HTML page: inline CSS, charts as data URIs, no
external resource of any kind, so the file can be mailed or archived alone."""

from __future__ import annotations

from typing import Mapping

from .document import ReportModel
from .forest import CAPTION as FOREST_CAPTION, SLUG as FOREST_SLUG, TITLE as FOREST_TITLE
from .effects import Effect
from .recommend import digest, not_applied_sentence
from .sections import (SET_APART, UNCORRECTED, advice_rule, excluded_sentences, grouped_warnings,
                       headlines, imprecise_keys, no_advice_sentence, rows_by_scenario, run_facts, timestamp,
                       uncorrected_sentences, what_was_measured)
from .tables import RESULTS_NOTE, cpu_table, offload_matrix, throughput_table
from .timeseries import series_slug
from .page import data_uri, escape as _e, html_table as render_table, page
from .views import seed_views


def render_html(model: ReportModel, charts: Mapping[str, bytes]) -> str:
    """``charts``: group slug → PNG bytes, embedded inline."""
    info = model.info
    title = f"offlab report — {info.plan} (run {info.run_id})"
    body = [
        f"<h1>{_e(title)}</h1>",
        f'<p class="sub">{_e(info.host or "")} · {_e(info.kernel)} · {_e(info.cpu_model)} · '
        f"{_e(timestamp(info.started_at))} · status "
        f'<span class="status-{_e(model.status)}">{_e(model.status)}</span></p>',
        '<nav><a href="#summary">Summary</a><a href="#recommendations">Recommendations</a>'
        '<a href="#warnings">Warnings</a><a href="#results">Results</a>'
        '<a href="#appendix">Appendix</a></nav>',
        _forest(charts),
        '<h2 id="summary">Summary</h2>',
        render_table(run_facts(model), "facts"),
        _measured(model),
        _headlines(model),
        _recommendations(model),
        _warnings(model),
        _results(model, charts),
        _views(model, charts),
        _appendix(model),
    ]
    return page(title, "".join(body))


def _forest(charts: Mapping[str, bytes]) -> str:
    """The forest plot of every tested effect, first thing under the title."""
    if FOREST_SLUG not in charts:
        return ""
    return (f'<h2 id="{FOREST_SLUG}">{_e(FOREST_TITLE)}</h2><p class="sub">{_e(FOREST_CAPTION)}</p>'
            f'<img class="chart" alt="{_e(FOREST_TITLE)}" src="{data_uri(charts[FOREST_SLUG])}">')


def _measured(model: ReportModel) -> str:
    lines = what_was_measured(model)
    if not lines:
        return ""
    # The descriptions mark scenario names **bold** for Markdown.
    items = "".join(f"<li>{_e(line).replace('**', '')}</li>" for line in lines)
    return f'<h2 id="measured">What was measured</h2><ul>{items}</ul>'


def _headlines(model: ReportModel) -> str:
    lines = headlines(model)
    if not lines:
        return ""
    return "<ul>" + "".join(f"<li>{_e(line)}</li>" for line in lines) + "</ul>"


def _effect_item(effect: Effect) -> str:
    sentence = effect.sentence()
    action, _, rest = sentence.partition(" — ")
    return f'<li><span class="good">{_e(action)}</span> — {_e(rest)}</li>'


def _recommendations(model: ReportModel) -> str:
    rec = model.recommendations
    out = [
        '<h2 id="recommendations">Recommendations</h2>',
        f'<p class="muted">{_e(advice_rule(model))}</p>',
    ]
    empty = no_advice_sentence(model)
    if empty:
        out.append(f"<p>{_e(empty)}</p>")
    for title, effects in rec.goals:
        items = "".join(_effect_item(e) for e in effects)
        out.append(f'<h3>{_e(title)}</h3><p><b>{_e(digest(effects))}.</b></p>'
                   f'<ul class="rec">{items}</ul>')
    if rec.contradictions:
        items = "".join(f"<li>{_e(c.sentence())}</li>" for c in rec.contradictions)
        out.append(f'<h3>Contradictory results</h3><ul class="rec">{items}</ul>')
    for heading, lines in ((UNCORRECTED, uncorrected_sentences(model)),
                           *((h, excluded_sentences(model, kind)) for h, kind in SET_APART)):
        if lines:
            items = "".join(f"<li>{_e(line)}</li>" for line in lines)
            out.append(f'<h3>{_e(heading)}</h3><ul class="rec">{items}</ul>')
    if rec.no_effect:
        items = "".join(f"<li>{_e(n.sentence())}</li>" for n in rec.no_effect)
        out.append(f'<h3>No measurable effect here</h3><ul class="rec muted">{items}</ul>')
    if rec.not_applied:
        items = "".join(f"<li>{_e(not_applied_sentence(s))}</li>" for s in rec.not_applied)
        out.append(f'<h3>Requested but not in force</h3><ul class="rec">{items}</ul>')
    return "".join(out)


def _warnings(model: ReportModel) -> str:
    groups = grouped_warnings(model.warnings)
    out = ['<h2 id="warnings">Warnings</h2>']
    if not groups:
        out.append("<p>None.</p>")
    for group in groups:
        advice = f'<p class="advice">{_e(group.advice)}</p>' if group.advice else ""
        items = "".join(
            f"<li>{_e(w.message)}"
            + ("" if group.advice else f' — <span class="advice">{_e(w.advice)}</span>')
            + "</li>"
            for w in group.items
        )
        out.append(
            f'<div class="warn"><details><summary>{_e(group.title)} ({len(group.items)})'
            f"</summary>{advice}<ul>{items}</ul></details></div>"
        )
    return "".join(out)


def _results(model: ReportModel, charts: Mapping[str, bytes]) -> str:
    out = [
        '<h2 id="results">Results</h2>',
        f'<p class="muted">{_e(RESULTS_NOTE)}</p>',
    ]
    for group in model.groups:
        out.append(f'<h3 id="{_e(group.slug)}">{_e(group.title)}</h3>')
        if group.slug in charts:
            out.append(f'<img class="chart" alt="{_e(group.title)}" '
                       f'src="{data_uri(charts[group.slug])}">')
        if series_slug(group) in charts:
            out.append(f'<details><summary>Throughput over time</summary><img class="chart" '
                       f'alt="{_e(group.title)}: over time" src="{data_uri(charts[series_slug(group)])}">'
                       "</details>")
        out.append(render_table(throughput_table(group, imprecise_keys(model))))
        out.append("<details open><summary>CPU per role (% of its core, mean±std)</summary>"
                   f"{render_table(cpu_table(group))}</details>")
    return "".join(out)


def _views(model: ReportModel, charts: Mapping[str, bytes]) -> str:
    """Seed-shaped views (message-size curves, DUT tables), each a section."""
    out = []
    for view in seed_views(model):
        out.append(f"<h2>{_e(view.title)}</h2><p class=\"muted\">{_e(view.intro)}</p>")
        if view.chart in charts:
            out.append(f'<img class="chart" alt="{_e(view.title)}" '
                       f'src="{data_uri(charts[view.chart])}">')
        out += [f"<h3>{_e(caption)}</h3>{render_table(table)}" for caption, table in view.tables]
    return "".join(out)


def _appendix(model: ReportModel) -> str:
    info = model.info
    out = ['<h2 id="appendix">Appendix: environment and offload state in force</h2>',
           f"<p>Command line: <code>{_e(info.command_line)}</code></p>"]
    if info.tool_versions:
        out.append("<ul>" + "".join(f"<li>{_e(k)}: {_e(v)}</li>"
                                    for k, v in sorted(info.tool_versions.items())) + "</ul>")
    for title, rows in rows_by_scenario(model).items():
        table = offload_matrix(rows)
        if table.rows:
            out.append(f"<details open><summary>Offloads in force: {_e(title)}</summary>"
                       f"{render_table(table)}</details>")
    return "".join(out)
