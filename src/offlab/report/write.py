"""A stored run's report written to a folder: Markdown (with PNG charts beside it) and one
self-contained HTML file, both from the same model (``document.build_report_model``)."""

from __future__ import annotations

from pathlib import Path

from ..store.store import RunResults
from .charts import group_chart
from .timeseries import has_series, series_chart, series_slug
from .document import build_report_model
from .forest import SLUG as FOREST_SLUG, forest_chart
from .html import render_html
from .markdown import render_markdown
from .model import Thresholds
from .views import view_charts

MARKDOWN_NAME = "report.md"
HTML_NAME = "report.html"
CHART_DIR = "charts"


def write_report(
    results: RunResults, out_dir: str | Path, thresholds: Thresholds = Thresholds()
) -> tuple[Path, Path]:
    """Write ``report.md`` (+ ``charts/*.png``) and ``report.html`` into ``out_dir``;
    return (markdown path, html path)."""
    out = Path(out_dir)
    (out / CHART_DIR).mkdir(parents=True, exist_ok=True)
    model = build_report_model(results, thresholds)
    charts = {group.slug: group_chart(group) for group in model.groups}
    charts.update({series_slug(group): series_chart(group) for group in model.groups if has_series(group)})
    charts.update(view_charts(model))  # message-size curves, DUT study
    forest = forest_chart(model)
    if forest is not None:
        charts[FOREST_SLUG] = forest  # every effect at a glance, first on both reports
    chart_paths = {}
    for slug, png in charts.items():
        name = f"{CHART_DIR}/{_safe(slug)}.png"
        (out / name).write_bytes(png)
        chart_paths[slug] = name
    md_path, html_path = out / MARKDOWN_NAME, out / HTML_NAME
    md_path.write_text(render_markdown(model, chart_paths), encoding="utf-8")
    html_path.write_text(render_html(model, charts), encoding="utf-8")
    return md_path, html_path


def _safe(slug: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in slug)
