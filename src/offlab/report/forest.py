"""Every tested effect at a glance: a forest plot of each step (offload × scenario ×
traffic) on throughput and on CPU per Gbit/s — the effect of having the features on
(on relative to off: the sign of the summary, the tables, the advice and the claims),
with its 95 % CI (Fieller). Effects that hold across the report's tests (family.py) are
filled, the others hollow, and steps set apart from the advice (overload, a
virtual-device property, the mechanism reversed on one machine, a missed precision
target) are grey, with the reason beside them.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from .document import ReportModel
from .effects import Effect, Step
from .states import display_list

SLUG = "effects"
TITLE = "Every effect at a glance"
CAPTION = ("Effect of having the features on (on relative to off, the sign used everywhere in "
           "this report), 95 % CI (Fieller): filled = holds across all the report's tests "
           "(Holm-adjusted p < 0.05), hollow = not; grey = set apart from the advice (reason on "
           "the right). Left: throughput (higher is better); right: CPU per Gbit/s (lower is "
           "better).")
_SIGNIFICANT, _NOT, _EXCLUDED = "#1f4e9c", "#6c8ebf", "#b0b0b0"
MAX_ROWS = 80
"""Beyond this many steps the chart would be unreadable; the largest ones are kept."""


@dataclass(frozen=True)
class ForestRow:
    label: str
    throughput: Effect | None
    cpu: Effect | None
    excluded: str | None
    """Why the step is no offload effect (a short label), None when it may be advice."""


def forest_rows(model: ReportModel) -> list[ForestRow]:
    rec = model.recommendations
    steps: list[tuple[Step, str | None]] = [(s, None) for s in rec.steps]
    steps += [(s, why.label) for s, why in rec.excluded]
    rows = []
    for step, why in steps:
        if not step.credited:
            continue
        changes = {effect.metric: effect for effect in rec.effects_of(step)}
        if not changes:
            continue
        group = step.group
        after = f", after {step.on_row.profile.name}" if step.cumulative else ""
        label = (f"{group.scenario} · {group.traffic.label} · {step.where}: "
                 f"{display_list(step.credited)} on{after}")
        rows.append(ForestRow(label, changes.get("throughput"), changes.get("cpu"), why))
    rows.sort(key=lambda r: (r.excluded is not None,
                             -abs(r.throughput.keep_on.ratio if r.throughput else 0.0)))
    return rows[:MAX_ROWS]


def forest_chart(model: ReportModel) -> bytes | None:
    """The PNG, or None when no step had two profiles to compare."""
    rows = forest_rows(model)
    if not rows:
        return None
    fig = Figure(figsize=(12.5, 1.2 + 0.28 * len(rows)), dpi=96, layout="constrained")
    FigureCanvasAgg(fig)
    left, right = fig.subplots(1, 2, sharey=True)
    ys = list(range(len(rows)))[::-1]
    for ax, metric, title in ((left, "throughput", "throughput"), (right, "cpu", "CPU per Gbit/s")):
        for y, row in zip(ys, rows):
            _point(ax, y, row.throughput if metric == "throughput" else row.cpu, row.excluded)
        ax.axvline(0.0, color="#333", linewidth=0.8)
        ax.set_title(f"{title}: effect of having the features on (%)", fontsize=10)
        ax.grid(axis="x", alpha=0.3)
    left.set_yticks(ys, [r.label for r in rows], fontsize=7)
    for y, row in zip(ys, rows):
        if row.excluded:
            right.annotate(row.excluded, (1.01, y), xycoords=("axes fraction", "data"), fontsize=7,
                           color="#777", va="center")
    fig.suptitle(TITLE, fontsize=12)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


def _point(ax, y: int, effect: Effect | None, excluded: str | None) -> None:
    if effect is None:
        return
    change = effect.keep_on
    colour = _EXCLUDED if excluded else _SIGNIFICANT if effect.holds else _NOT
    if change.ci95 is not None:
        ax.plot([100 * change.ci95[0], 100 * change.ci95[1]], [y, y], color=colour, linewidth=1.6)
    filled = effect.holds and not excluded
    ax.plot([100 * change.ratio], [y], marker="o", markersize=5, color=colour,
            markerfacecolor=colour if filled else "white")
