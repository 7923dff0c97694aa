"""Throughput over time: each case's report intervals, repetitions overlaid, the warm-up
shaded, and stalls — intervals below a tenth of the case's median — found and flagged.
A mean hides a flow that stopped for a second; the series shows it.

iperf3 closes a test with whatever is left of its last interval (a few milliseconds
after the final full one): its rate is a handful of bytes over a sliver of time, not a
stall, so the stall detector leaves that trailing partial interval out."""

from __future__ import annotations

import io
import statistics
from typing import Iterator, Sequence

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from ..records import Interval, Sample
from ..warnings import Stall
from .model import CaseGroup

STALL_FRACTION = 0.10
PARTIAL = 0.9
"""A last interval shorter than this share of the others' median length is iperf3's
trailing remainder, not a report interval."""
_COLOURS = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c")


def measured(intervals: Sequence[Interval]) -> list[Interval]:
    return [i for i in intervals if not i.warmup]


def full_intervals(intervals: Sequence[Interval]) -> list[Interval]:
    """The measured intervals without iperf3's trailing partial one (the last, when it is
    shorter than the others)."""
    kept = measured(intervals)
    if len(kept) < 2:
        return kept
    usual = statistics.median(i.end_s - i.start_s for i in kept[:-1])
    last = kept[-1]
    return kept[:-1] if last.end_s - last.start_s < PARTIAL * usual else kept


def stalls(key: str, samples: Sequence[Sample]) -> Iterator[Stall]:
    """Stalls of one case: full measured intervals under STALL_FRACTION × the median
    interval rate over all its repetitions."""
    rates = [i.bps for s in samples for i in full_intervals(s.intervals)]
    if len(rates) < 3:
        return
    median = statistics.median(rates)
    if median <= 0:
        return
    for sample in samples:
        slow = [i for i in full_intervals(sample.intervals) if i.bps < STALL_FRACTION * median]
        if slow:
            yield Stall(key, sample.repetition, len(slow), sum(i.end_s - i.start_s for i in slow), median)


def series_slug(group: CaseGroup) -> str:
    return f"{group.slug}-series"


def has_series(group: CaseGroup) -> bool:
    return any(s.intervals for row in group.rows for s in row.samples)


def series_chart(group: CaseGroup) -> bytes:
    """One panel per profile of the group; each repetition one line."""
    unit, scale = group.rate_unit
    rows = [r for r in group.rows if any(s.intervals for s in r.samples)]
    fig = Figure(figsize=(12.5, 1.9 * len(rows) + 0.8), dpi=96, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(rows), 1, sharex=True, squeeze=False)[:, 0]
    for ax, row in zip(axes, rows):
        warm_end = 0.0
        for number, sample in enumerate(row.samples):
            xs = [(i.start_s + i.end_s) / 2 for i in sample.intervals]
            ys = [i.bps / 1e9 * scale for i in sample.intervals]
            ax.plot(xs, ys, color=_COLOURS[number % len(_COLOURS)], linewidth=1.0,
                    label=f"#{sample.repetition}")
            warm_end = max([warm_end] + [i.end_s for i in sample.intervals if i.warmup])
        if warm_end:
            ax.axvspan(0, warm_end, color="#eeeeee", zorder=0)
        ax.set_ylim(bottom=0)
        ax.set_ylabel(unit, fontsize=8)
        ax.set_title(row.profile.name, fontsize=9, loc="left")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7, ncol=8, loc="lower right")
    axes[-1].set_xlabel("seconds since the test started (grey: warm-up, not measured)")
    fig.suptitle(f"{group.title}: throughput over time", fontsize=11)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()
