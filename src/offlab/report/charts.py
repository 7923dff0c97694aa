"""Charts of one group, as PNG bytes: throughput per profile, CPU % per Gbps per
profile (both with 95 % CI error bars) and stacked CPU classes per role.

Uses matplotlib's object API with the Agg canvas directly, so nothing touches
pyplot's global state or needs a display.
"""

from __future__ import annotations

import io

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from ..analysis.stats import Summary
from .model import CaseGroup
from .validity import overloaded

STACKED_CLASSES = ("usr", "sys", "irq", "soft")
_CLASS_COLOURS = {"usr": "#4c72b0", "sys": "#dd8452", "irq": "#c44e52", "soft": "#8172b3",
                  "other": "#937860"}
_RECEIVED, _SENT, _CPU = "#55a868", "#a6d5b3", "#4c72b0"


def group_chart(group: CaseGroup) -> bytes:
    """One PNG: throughput and CPU per Gbps on top, one CPU-class panel per role below."""
    roles = list(dict.fromkeys(role.role for row in group.rows for role in row.roles))
    fig = Figure(figsize=(12.5, 7.6 if roles else 4.0), dpi=96, layout="constrained")
    FigureCanvasAgg(fig)
    top, bottom = fig.subfigures(2, 1, height_ratios=(1, 1)) if roles else (fig, None)
    throughput_ax, cpu_ax = top.subplots(1, 2)
    _throughput_panel(throughput_ax, group)
    _cpu_per_gbps_panel(cpu_ax, group)
    if bottom is not None:
        axes = bottom.subplots(1, len(roles), sharey=True, squeeze=False)[0]
        for ax, role_name in zip(axes, roles):
            _role_panel(ax, group, role_name)
        axes[-1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.suptitle(group.title, fontsize=12)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


def _errs(stats: list[Summary | None], scale: float = 1.0) -> list[list[float]]:
    """Asymmetric error bars from each summary's 95 % interval, which never reaches below
    zero (stats.Summary.interval): [[down…], [up…]]."""
    down, up = [], []
    for stat in stats:
        if stat is None or stat.interval is None:
            down.append(0.0)
            up.append(0.0)
            continue
        low, high = stat.interval
        down.append(max(0.0, stat.mean - low) * scale)
        up.append(max(0.0, high - stat.mean) * scale)
    return [down, up]


def _clip_outlier(ax, heights: list[float], errors: list[list[float]]) -> None:
    """One bar far above the rest would flatten them: the axis stops at 1.6 × the
    second-highest bar (with its error) and the clipped bar carries its value."""
    tops = sorted((h + e for h, e in zip(heights, errors[1])), reverse=True)
    if len(tops) < 2 or tops[1] <= 0 or tops[0] <= 4 * tops[1]:
        return
    limit = 1.6 * tops[1]
    ax.set_ylim(0, limit)
    for x, height in enumerate(heights):
        if height + errors[1][x] > limit:
            ax.annotate(f"{height:.3g} ↑", (x, limit), ha="center", va="top", fontsize=8)


def _profile_axis(ax, names: list[str]) -> None:
    ax.set_xticks(range(len(names)), names, rotation=25, ha="right", fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)


def _throughput_panel(ax, group: CaseGroup) -> None:
    unit, scale = group.rate_unit
    names = [r.profile.name for r in group.rows]
    xs = range(len(names))
    received = [r.throughput.mean * scale for r in group.rows]
    received_err = _errs([r.throughput for r in group.rows], scale)
    if group.traffic.protocol == "udp":
        width = 0.4
        sent = [r.sender.mean * scale for r in group.rows]
        sent_err = _errs([r.sender for r in group.rows], scale)
        ax.bar([x - width / 2 for x in xs], sent, width, yerr=sent_err, capsize=3,
               color=_SENT, label="sent")
        ax.bar([x + width / 2 for x in xs], received, width, yerr=received_err, capsize=3,
               color=_RECEIVED, label="received")
        ax.legend(fontsize=8)
    else:
        ax.bar(xs, received, 0.6, yerr=received_err, capsize=4, color=_RECEIVED)
    for x, row in zip(xs, group.rows):
        if overloaded(row):
            ax.annotate("overloaded", (x, 0), ha="center", va="bottom", rotation=90, fontsize=8)
    _clip_outlier(ax, received, received_err)
    ax.set_ylabel(f"throughput ({unit})")
    ax.set_title("Throughput (mean, 95% CI)", fontsize=10)
    _profile_axis(ax, names)


def _cpu_per_gbps_panel(ax, group: CaseGroup) -> None:
    names = [r.profile.name for r in group.rows]
    # An overloaded row has no CPU per Gbps worth a bar (what it moved was not its rate).
    usable = [None if overloaded(r) else r.cpu_per_gbps for r in group.rows]
    means = [s.mean if s else 0.0 for s in usable]
    errs = _errs(usable)
    ax.bar(range(len(names)), means, 0.6, yerr=errs, capsize=4, color=_CPU)
    _clip_outlier(ax, means, errs)
    ax.set_ylabel("CPU % per Gbit/s (lower is better)")
    ax.set_title(f"CPU cost ({group.cpu_basis})", fontsize=10)
    _profile_axis(ax, names)


def _role_panel(ax, group: CaseGroup, role_name: str) -> None:
    names = [r.profile.name for r in group.rows]
    bottoms = [0.0] * len(names)
    for cls in (*STACKED_CLASSES, "other"):
        heights = [_class_share(row, role_name, cls) for row in group.rows]
        ax.bar(range(len(names)), heights, 0.6, bottom=bottoms, color=_CLASS_COLOURS[cls],
               label=cls, edgecolor="white", linewidth=0.5)
        bottoms = [b + h for b, h in zip(bottoms, heights)]
    cores = {r.core for row in group.rows for r in row.roles if r.role == role_name}
    core = f" (core {', '.join(map(str, sorted(cores)))})" if cores else ""
    ax.set_ylim(0, 100)
    ax.set_ylabel("% of the core (busy classes)")
    ax.set_title(f"CPU {role_name}{core}", fontsize=10)
    _profile_axis(ax, names)


def _class_share(row, role_name: str, cls: str) -> float:
    role = next((r for r in row.roles if r.role == role_name), None)
    if role is None:
        return 0.0
    if cls == "other":
        return sum(
            s.mean for name, s in role.classes.items()
            if name not in STACKED_CLASSES and name not in ("idle", "iowait")
        )
    return role.classes[cls].mean
