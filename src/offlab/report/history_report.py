"""Writing a history (history.py): Markdown and self-contained HTML, one table and one
chart per case. The chart: throughput per run with its 95 % CI (left) and the offload
profile's effect against all on within each run (right); a run whose throughput changed
significantly from the previous one is drawn in red and named in the table with `*`."""

from __future__ import annotations

import io
import time
from html import escape
from pathlib import Path

from .history import CaseHistory, HistoryPoint
from .page import data_uri, html_table, markdown_table as md_table, page
from .cells import Table, mean_std
from .tables import versus

MARKDOWN_NAME = "history.md"
HTML_NAME = "history.html"
_STEADY, _CHANGED = "#4c72b0", "#c44e52"
_MOST_TICKS = 5
"""Runs named under a chart's axis at most: a history of 100 runs names every 20th (the
table names them all). A label ("2026-09-21 13:08" over the kernel) is ~75 px at 7 pt
and a panel ~540 px wide: 6 of them touched, 12 overlapped, 100 were most of the drawing."""


def _started(point: HistoryPoint) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(point.run.started_at))


def history_table(case: CaseHistory) -> Table:
    rows = tuple(
        (p.run.run_id, _started(p), p.run.kernel, mean_std(p.throughput),
         versus(p.change) if p.change is not None else "—", mean_std(p.cpu_per_gbps),
         versus(p.cpu_change) if p.cpu_change is not None else "—",
         versus(p.effect) if p.effect is not None else "baseline",
         "; ".join(p.changed) or ("—" if p.change is None else "nothing recorded"))
        for p in case.points
    )
    header = ("run", "started (UTC)", "kernel", "Gbit/s", "vs previous run", "CPU %/Gbps",
              "vs previous run", "effect vs all on", "what changed")
    return Table(header=header, rows=rows, align_left=3)


def _ci_errors(points: tuple[HistoryPoint, ...]) -> list[list[float]]:
    """Error bars from each run's 95 % interval of throughput (none with one repetition)."""
    down, up = [], []
    for p in points:
        mean, interval = p.throughput.mean, p.interval
        low, high = interval if interval is not None else (mean, mean)
        down.append(max(0.0, mean - low))
        up.append(max(0.0, high - mean))
    return [down, up]


def history_chart(case: CaseHistory) -> bytes:
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # a second to import: only here
    from matplotlib.figure import Figure
    fig = Figure(figsize=(12.5, 3.8), dpi=96, layout="constrained")
    FigureCanvasAgg(fig)
    left, right = fig.subplots(1, 2)
    x = list(range(len(case.points)))
    step = -(-len(x) // _MOST_TICKS)
    ticks = x[::step]
    labels = [f"{_started(case.points[i])}\n{case.points[i].run.kernel}" for i in ticks]
    colours = [_CHANGED if p.significant else _STEADY for p in case.points]
    means = [p.throughput.mean for p in case.points]
    errors = _ci_errors(case.points)
    left.plot(x, means, color="#999999", linewidth=1, zorder=1)
    left.errorbar(x, means, yerr=errors, fmt="none", ecolor="#555555", capsize=3, zorder=2)
    left.scatter(x, means, c=colours, zorder=3)
    left.set_ylabel("Gbit/s (mean, 95 % CI)")
    left.set_title("throughput per run (red: a significant change of throughput or CPU per Gbit/s "
                   "from the previous run)", fontsize=9)
    effects = [p.effect.ratio * 100 if p.effect is not None else 0.0 for p in case.points]
    right.bar(x, effects, color=[_STEADY if p.effect is None or not p.effect.significant else "#55a868"
                                 for p in case.points])
    right.axhline(0, color="#333333", linewidth=0.8)
    right.set_ylabel("% against all on")
    right.set_title("the profile's effect within each run (green: significant)", fontsize=9)
    for ax in (left, right):
        ax.set_xticks(ticks, labels, fontsize=7)
    fig.suptitle(case.key, fontsize=11)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


_LEGEND = ("Cells are mean±std over a run's repetitions; `vs previous run` is the change of "
           "throughput (or CPU %/Gbps) against the run before it with its 95 % CI, `*` significant (Welch p < 0.05, "
           "CI excluding 0), `n.s.` not; `effect vs all on` is the profile's change against the "
           "same run's all-on baseline. `what changed` lists kernel, host, offlab version, hosts and "
           "each host's NIC driver and firmware between the two runs.")


def render_markdown(cases: list[CaseHistory], pattern: str, store: str) -> str:
    parts = [f"# offlab history: {pattern}", "", f"Store: {store}. {len(cases)} matching cases.", "", _LEGEND]
    for case in cases:
        parts += ["", f"## {case.key}", "", md_table(history_table(case))]
    return "\n".join(parts) + "\n"


def render_html(cases: list[CaseHistory], pattern: str, store: str) -> str:
    title = f"offlab history: {pattern}"
    body = [f"<h1>{escape(title)}</h1>", f"<p>Store: {escape(store)}. {len(cases)} matching cases.</p>",
            f"<p class=sub>{escape(_LEGEND)}</p>"]
    for case in cases:
        body += [f"<h2>{escape(case.key)}</h2>", html_table(history_table(case)),
                 f'<img alt="history of {escape(case.key)}" src="{data_uri(history_chart(case))}">']
    return page(title, "\n".join(body))


def write_history(cases: list[CaseHistory], pattern: str, store: str, out_dir: Path) -> tuple[Path, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    md, html = out_dir / MARKDOWN_NAME, out_dir / HTML_NAME
    md.write_text(render_markdown(cases, pattern, store), encoding="utf-8")
    html.write_text(render_html(cases, pattern, store), encoding="utf-8")
    return md, html
