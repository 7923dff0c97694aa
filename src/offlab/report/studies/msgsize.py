"""Message-size curves (seed 001): throughput and CPU % per Gbps against the TCP write
size, one line per offload profile with its 95 % confidence band, unidirectional and
bidirectional panels, on a log2 axis. Built from the report's profile rows; pure
except for `curve_chart`, which draws with matplotlib's object API (no pyplot state).
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from ..model import ProfileRow, is_all_on
from ..cells import Table, mean_std
from ..section import Section
from ...analysis.stats import Summary

CURVES_INTRO = (
    "TCP stream against the write size (iperf3 -l), one line per offload profile, "
    "shaded 95% CI (Student t) over the runs. CPU % is summed over both cores and "
    "divided by the throughput (bidirectional: both directions together). "
    "Table cells are mean±std; the last columns give all-on's throughput over each "
    "other profile's (the seed's TOE-to-NIC ratio)."
)

_COLOURS = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860")


@dataclass(frozen=True)
class CurvePoint:
    size: int
    """TCP write size, bytes."""
    row: ProfileRow

    @property
    def throughput(self) -> Summary:
        return self.row.throughput

    @property
    def cpu_per_gbps(self) -> Summary | None:
        return self.row.cpu_per_gbps


@dataclass(frozen=True)
class Curve:
    profile: str
    baseline: bool
    """The all-on profile, against which the others' ratios are given."""
    points: tuple[CurvePoint, ...]
    """Ascending size."""

    def at(self, size: int) -> CurvePoint | None:
        return next((p for p in self.points if p.size == size), None)


@dataclass(frozen=True)
class CurvePanel:
    bidirectional: bool
    curves: tuple[Curve, ...]

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(sorted({p.size for c in self.curves for p in c.points}))

    @property
    def label(self) -> str:
        return "bidirectional" if self.bidirectional else "unidirectional"


@dataclass(frozen=True)
class CurveSet:
    """Every message-size curve of one scenario and MTU."""

    scenario: str
    mtu: int
    panels: tuple[CurvePanel, ...]

    @property
    def title(self) -> str:
        return f"{self.scenario} · MTU {self.mtu} · TCP throughput and CPU vs message size"

    @property
    def slug(self) -> str:
        return f"curves-{self.scenario}-mtu{self.mtu}"


def size_label(size: int) -> str:
    """64, 1K, 256K, 1M (binary multiples, as the seed's axis)."""
    for unit, factor in (("M", 1 << 20), ("K", 1 << 10)):
        if size >= factor and size % factor == 0:
            return f"{size // factor}{unit}"
    return str(size)


def curve_sets(rows: Iterable[ProfileRow]) -> tuple[CurveSet, ...]:
    """Curves of TCP rows with a message size, per scenario × MTU, when at least two
    sizes were measured there (one point is no curve)."""
    tree: dict[tuple[str, int], dict[bool, dict[str, dict[int, ProfileRow]]]] = {}
    for row in rows:
        traffic = row.case.traffic
        if traffic.protocol != "tcp" or not traffic.message_size:
            continue
        panel = tree.setdefault((row.case.scenario_label, row.case.mtu), {}).setdefault(
            traffic.bidirectional, {})
        panel.setdefault(_profile_label(row), {})[traffic.message_size] = row
    sets = []
    for (scenario, mtu), panels in tree.items():
        built = tuple(_panel(bidir, panels[bidir]) for bidir in sorted(panels))
        if any(len(p.sizes) >= 2 for p in built):
            sets.append(CurveSet(scenario, mtu, built))
    return tuple(sets)


def _profile_label(row: ProfileRow) -> str:
    return row.profile.name if is_all_on(row.case) else f"{row.profile.side}:{row.profile.name}"


def _panel(bidirectional: bool, profiles: dict[str, dict[int, ProfileRow]]) -> CurvePanel:
    curves = []
    for label, by_size in profiles.items():
        points = tuple(CurvePoint(size, by_size[size]) for size in sorted(by_size))
        curves.append(Curve(label, is_all_on(points[0].row.case), points))
    curves.sort(key=lambda c: not c.baseline)  # the baseline first, then plan order
    return CurvePanel(bidirectional, tuple(curves))


# --- table ----------------------------------------------------------------------------


def curve_table(panel: CurvePanel) -> Table:
    """Rows per size: each profile's throughput (Gbit/s) and CPU % per Gbps as
    mean±std, then each profile's throughput relative to all on (the seed's "TOE is
    up to 2× the NIC" reads as the all-on column over the others)."""
    baseline = next((c for c in panel.curves if c.baseline), None)
    others = [c for c in panel.curves if c is not baseline]
    header = ["Message size"]
    for curve in panel.curves:
        header += [f"{curve.profile} Gbit/s", f"{curve.profile} CPU %/Gbps"]
    if baseline is not None:
        header += [f"all-on ÷ {c.profile}" for c in others]
    body = []
    for size in panel.sizes:
        cells = [size_label(size)]
        for curve in panel.curves:
            point = curve.at(size)
            cells += [mean_std(point.throughput) if point else "–",
                      mean_std(point.cpu_per_gbps) if point else "–"]
        if baseline is not None:
            cells += [_ratio(baseline.at(size), c.at(size)) for c in others]
        body.append(tuple(cells))
    return Table(tuple(header), tuple(body), align_left=1)


def _ratio(top: CurvePoint | None, bottom: CurvePoint | None) -> str:
    if top is None or bottom is None or bottom.throughput.mean <= 0:
        return "–"
    return f"{top.throughput.mean / bottom.throughput.mean:.2f}×"


# --- chart ----------------------------------------------------------------------------


def curve_chart(curves: CurveSet) -> bytes:
    """PNG: one row per direction (uni, bidir), throughput left, CPU % per Gbps right."""
    rows = len(curves.panels)
    fig = Figure(figsize=(12.5, 3.8 * rows + 0.6), dpi=96, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, 2, squeeze=False)
    for (throughput_ax, cpu_ax), panel in zip(axes, curves.panels):
        for number, curve in enumerate(panel.curves):
            colour = _COLOURS[number % len(_COLOURS)]
            _line(throughput_ax, curve, colour, lambda p: p.throughput)
            _line(cpu_ax, curve, colour, lambda p: p.cpu_per_gbps, log_axis=True)
        # The cost per Gbit/s spans decades between 64 B and 256 KiB writes.
        cpu_ax.set_yscale("log")
        throughput_ax.set_ylim(bottom=0)
        throughput_ax.set_ylabel("throughput (Gbit/s)")
        throughput_ax.set_title(f"Throughput, {panel.label} (mean, 95% CI)", fontsize=10)
        cpu_ax.set_ylabel("CPU % per Gbit/s (lower is better)")
        cpu_ax.set_title(f"CPU cost, all cores, {panel.label}", fontsize=10)
        for ax in (throughput_ax, cpu_ax):
            _size_axis(ax, panel.sizes)
        throughput_ax.legend(fontsize=8)
    fig.suptitle(curves.title, fontsize=12)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


def _line(ax, curve: Curve, colour: str, pick, log_axis: bool = False) -> None:
    points = [(p.size, pick(p)) for p in curve.points if pick(p) is not None]
    if not points:
        return
    xs = [size for size, _ in points]
    means = [stat.mean for _, stat in points]
    spans = [stat.ci95 or 0.0 for _, stat in points]
    ax.plot(xs, means, marker="o", markersize=3.5, linewidth=1.6, color=colour,
            label=curve.profile)
    # On a log axis the band is floored above zero so that it stays drawable.
    floor = (lambda m: m / 20) if log_axis else (lambda m: 0.0)
    ax.fill_between(xs, [max(m - s, floor(m)) for m, s in zip(means, spans)],
                    [m + s for m, s in zip(means, spans)], color=colour, alpha=0.18,
                    linewidth=0)


def _size_axis(ax, sizes: tuple[int, ...]) -> None:
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(sizes), [size_label(s) for s in sizes], fontsize=8)
    ax.minorticks_off()
    ax.set_xlabel("TCP write size (bytes, iperf3 -l)")
    ax.grid(alpha=0.3)
    ax.set_axisbelow(True)


def sections(rows: Sequence[Any], report: Any) -> list[Section]:
    """This study's views in the run report, from the report's profile rows."""
    sections = []
    for curves in curve_sets(rows):
        tables = tuple((f"{curves.scenario} · MTU {curves.mtu}, {panel.label}", curve_table(panel))
                       for panel in curves.panels)
        sections.append(Section(curves.title, CURVES_INTRO, tables, curves.slug))
    return sections


def charts(rows: Sequence[Any]) -> dict[str, bytes]:
    """slug → PNG of this study's views that have a chart."""
    return {curves.slug: curve_chart(curves) for curves in curve_sets(rows)}
