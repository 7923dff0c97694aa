"""Views of the traffic modes beyond a plain stream: latency under load (irtt beside a
TCP stream), request/response latency (sockperf ping-pong) and UDP capacity at bounded
loss — each a table per scenario and MTU, one row per profile, and a latency chart."""

from __future__ import annotations

import io
from typing import Sequence

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from ..stats import summary
from ..studies import Section
from .model import ProfileRow
from .tables import Table, mean_std

LATENCY_KINDS = (("rtt", "RTT of a 10 ms irtt probe beside the TCP stream"),
                 ("rr", "TCP request/response round trip, sockperf ping-pong, 64 B"))
PERCENTILES = (("p50", "p50"), ("p99", "p99"), ("p999", "p99.9"))
LATENCY_INTRO = ("Offloads trade latency for throughput: a 64 KiB super-packet delays what "
                 "queues behind it, and GRO holds packets until its flush. Round-trip times in µs, "
                 "mean ± std over the runs of each percentile; the probe's lost packets beside them.")
CAPACITY_INTRO = ("The highest offered UDP rate whose loss stayed at or below the bound, found by "
                  "a binary search over the rate (RFC 2544's throughput test; every probe is in the "
                  "store). Capacity is what the receiver took at that rate, mean ± std over runs; "
                  "\u201csender-bound\u201d means even the unlimited probe kept within the bound.")


def _per_percentile(row: ProfileRow, kind: str, name: str):
    values = [s.counters.get(f"{kind}_{name}_us") for s in row.samples]
    return summary(values) if values and None not in values else None  # type: ignore[arg-type]


def _by_place(rows: Sequence[ProfileRow], wanted) -> dict[str, list[ProfileRow]]:
    places: dict[str, list[ProfileRow]] = {}
    for row in rows:
        if wanted(row):
            places.setdefault(f"{row.case.scenario_label} · MTU {row.case.mtu}", []).append(row)
    return places


def latency_sections(rows: Sequence[ProfileRow]) -> list[Section]:
    sections = []
    for kind, what in LATENCY_KINDS:
        places = _by_place(rows, lambda r, k=kind: _per_percentile(r, k, "p50") is not None)
        tables = []
        for place, found in places.items():
            body = []
            for row in found:
                cells = [mean_std(_per_percentile(row, kind, name)) for name, _ in PERCENTILES]
                lost = sum(s.counters.get(f"{kind}_lost", 0.0) for s in row.samples)
                body.append((f"{row.profile.side}:{row.profile.name}", row.case.traffic.label, *cells,
                             f"{lost:.0f}"))
            header = ("Profile", "Traffic", *(f"{label} (µs)" for _, label in PERCENTILES), "lost")
            tables.append((f"{place}: {what}", Table(header, tuple(body), align_left=2)))
        if tables:
            slug = f"latency-{kind}"
            sections.append(Section(f"Latency: {what}", LATENCY_INTRO, tuple(tables), slug))
    return sections


def latency_charts(rows: Sequence[ProfileRow]) -> dict[str, bytes]:
    charts = {}
    for kind, what in LATENCY_KINDS:
        found = [r for r in rows if _per_percentile(r, kind, "p99") is not None]
        if not found:
            continue
        fig = Figure(figsize=(12.5, 4.0), dpi=96, layout="constrained")
        FigureCanvasAgg(fig)
        ax = fig.subplots()
        names = [f"{r.case.scenario_label} {r.profile.name}" for r in found]
        for offset, (name, label) in zip((-0.25, 0.0, 0.25), PERCENTILES):
            stats = [_per_percentile(r, kind, name) for r in found]
            ax.bar([x + offset for x in range(len(found))], [s.median for s in stats], 0.25, label=label)
        ax.set_yscale("log")  # p99.9 is often 10× p50: one scale would flatten the others
        ax.set_ylabel("µs (log scale; median over runs)")
        ax.set_xticks(range(len(names)), names, rotation=25, ha="right", fontsize=8)
        ax.legend(fontsize=8)
        ax.set_title(what, fontsize=10)
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png")
        charts[f"latency-{kind}"] = buffer.getvalue()
    return charts


def capacity_sections(rows: Sequence[ProfileRow]) -> list[Section]:
    places = _by_place(rows, lambda r: r.case.traffic.mode == "capacity")
    tables = []
    for place, found in places.items():
        body = []
        for row in found:
            knees = [max((p for p in s.probes if p.loss_percent <= row.case.traffic.loss_percent),
                         key=lambda p: p.received_bps, default=None) for s in row.samples]
            offered = [k.offered_bps or k.sent_bps for k in knees if k is not None]
            losses = [k.loss_percent for k in knees if k is not None]
            bound = sum(1 for s in row.samples if s.probes and s.probes[0].loss_percent
                        <= row.case.traffic.loss_percent)
            body.append((
                f"{row.profile.side}:{row.profile.name}", row.case.traffic.label,
                mean_std(row.throughput),
                mean_std(summary([o / 1e9 for o in offered])) if offered else "none passed",
                mean_std(summary(losses)) if losses else "—",
                f"{sum(len(s.probes) for s in row.samples) / len(row.samples):.1f}",
                f"{bound} of {row.n}" if bound else "no",
            ))
        header = ("Profile", "Traffic", "Capacity (Gbit/s)", "Offered at the knee (Gbit/s)",
                  "Loss there %", "Probes per run", "Sender-bound")
        tables.append((f"{place}: UDP capacity at ≤ {found[0].case.traffic.loss_percent:g}% loss",
                       Table(header, tuple(body), align_left=2)))
    return [Section("UDP capacity at bounded loss", CAPACITY_INTRO, tuple(tables))] if tables else []
