"""Latency views: per scenario, one row per profile with the round trips pooled over its
repetitions, n shown, each percentile with its 95 % bootstrap CI and given only where
enough round trips carry it (rtthist.py); and a CDF chart per kind of probe with one
panel per scenario, one line per profile (flent's CDF plots as the model).

Samples measured before histograms were kept fall back to the per-run percentiles,
mean ± std over runs, again only where the pooled count of round trips allows."""

from __future__ import annotations

import io
from typing import Sequence

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from ..measure import latency, rtthist
from ..analysis.stats import summary
from .section import Section
from .model import ProfileRow, is_all_on
from .cells import Table, mean_std

LATENCY_KINDS = (
    ("rtt", "RTT of a 2 ms irtt probe beside the saturating TCP stream"),
    ("rrload", f"TCP request/response at a fixed load: sockperf ping-pong, 64 B, "
               f"{latency.RR_PACED_RATE}/s, beside the paced TCP stream"),
    ("rr", "request/response round trip, sockperf ping-pong, 64 B"))
PERCENTILES = ((50.0, "p50", "p50"), (99.0, "p99", "p99"), (99.9, "p999", "p99.9"))
LATENCY_METHOD = (
    "Round-trip times in µs, pooled over the runs of each profile (n round trips), with the "
    "95 % CI of a two-level bootstrap (runs resampled, then round trips within each) in "
    "brackets. Probes run pinned to their role's core (client with the sender, server with "
    "the receiver) and count only inside the stream's measured window (irtt's probes by their "
    "send timestamps; sockperf runs whole seconds inside it). A percentile is given only when "
    f"n reaches {rtthist.MIN_SAMPLES[99.0]} for p99 and {rtthist.MIN_SAMPLES[99.9]} for p99.9: "
    "below that it would be the maximum of a handful of values. Percentiles are read from "
    "histograms with bins 4.4 % wide.")


def _histograms(row: ProfileRow, kind: str) -> list[dict[int, int]]:
    return [h for h in (rtthist.from_counters(s.counters, kind) for s in row.samples) if h]


def _measured(row: ProfileRow, kind: str) -> bool:
    return any(f"{kind}_p50_us" in s.counters for s in row.samples)


def _cell(row: ProfileRow, kind: str, q: float, name: str) -> str:
    hists = _histograms(row, kind)
    if hists:
        found = rtthist.estimate(hists, q)
        if found.value is None:
            return f"n < {rtthist.MIN_SAMPLES[q]}"
        if found.interval is None:
            return _us(found.value)
        return f"{_us(found.value)} [{_us(found.interval[0])}–{_us(found.interval[1])}]"
    n = _count(row, kind)  # an older store: per-run percentiles only
    values = [s.counters.get(f"{kind}_{name}_us") for s in row.samples]
    if n < rtthist.MIN_SAMPLES[q] or None in values:
        return f"n < {rtthist.MIN_SAMPLES[q]}"
    return mean_std(summary(values))  # type: ignore[arg-type]


def _us(value: float) -> str:
    """µs as a reader scans them: whole numbers from 100 up, three figures below."""
    return f"{value:.0f}" if value >= 100 else f"{value:.3g}"


def _count(row: ProfileRow, kind: str) -> int:
    hists = _histograms(row, kind)
    if hists:
        return sum(sum(h.values()) for h in hists)
    return int(sum(s.counters.get(f"{kind}_samples", 0.0) for s in row.samples))


def _by_place(rows: Sequence[ProfileRow], kind: str) -> dict[str, list[ProfileRow]]:
    places: dict[str, list[ProfileRow]] = {}
    for row in rows:
        if _measured(row, kind):
            places.setdefault(f"{row.case.scenario_label} · MTU {row.case.mtu}", []).append(row)
    return places


def latency_sections(rows: Sequence[ProfileRow]) -> list[Section]:
    sections = []
    for kind, what in LATENCY_KINDS:
        tables = []
        for place, found in _by_place(rows, kind).items():
            body = []
            for row in found:
                lost = sum(s.counters.get(f"{kind}_lost", 0.0) for s in row.samples)
                body.append((f"{row.profile.side}:{row.profile.name}", row.case.traffic.label,
                             str(_count(row, kind)), *(_cell(row, kind, q, name) for q, name, _ in PERCENTILES),
                             f"{lost:.0f}"))
            header = ("Profile", "Traffic", "n", *(f"{label} (µs)" for _, _, label in PERCENTILES), "lost")
            tables.append((f"{place}: {what}", Table(header, tuple(body), align_left=2)))
        if tables:
            intro = f"{opening(rows, kind)} {LATENCY_METHOD}"
            sections.append(Section(f"Latency: {what}", intro, tuple(tables), f"latency-{kind}"))
    return sections


def opening(rows: Sequence[ProfileRow], kind: str) -> str:
    """The section's first sentence, from its data: where all on's median round trip
    stands among the profiles it is compared with (per scenario × MTU × traffic), and
    whether the 95 % intervals tell them apart. Offloads are said to trade latency for
    throughput only where all on was the slowest."""
    ranks, apart = [], 0
    for place, found in _by_place(rows, kind).items():
        for traffic in dict.fromkeys(r.case.traffic.label for r in found):
            medians = {id(r): rtthist.estimate(_histograms(r, kind), 50.0) for r in found
                       if r.case.traffic.label == traffic and _histograms(r, kind)}
            on = [r for r in found if r.case.traffic.label == traffic and is_all_on(r.case) and id(r) in medians]
            others = [medians[id(r)] for r in found if r.case.traffic.label == traffic
                      and not is_all_on(r.case) and id(r) in medians and medians[id(r)].value is not None]
            if not on or not others or medians[id(on[0])].value is None:
                continue
            base = medians[id(on[0])]
            ranks.append("lowest" if all(base.value < o.value for o in others) else
                         "highest" if all(base.value > o.value for o in others) else "between")
            apart += all(_apart(base, o) for o in others)
    if not ranks:
        return "No all-on profile was measured beside others here, so nothing is said of the offloads' latency."
    total = len(ranks)
    if len(set(ranks)) == 1:
        where = {"lowest": "the lowest", "highest": "the highest",
                 "between": "neither the lowest nor the highest"}[ranks[0]] + f" in {total} of {total} comparisons"
    else:
        where = (f"the lowest in {ranks.count('lowest')}, the highest in {ranks.count('highest')} and "
                 f"in between in {ranks.count('between')} of {total} comparisons")
    told = (f"with the 95 % intervals apart from every other profile's in {apart} of them"
            if apart else "though within the other profiles' 95 % intervals")
    verdict = ("so here the offloads traded latency for throughput (a 64 KiB super-packet delays "
               "what queues behind it; GRO holds packets until its flush)"
               if ranks.count("highest") * 2 > total and apart * 2 > total else
               "so these runs show no latency cost of having the offloads on"
               if ranks.count("highest") == 0 else "so these runs show no single direction")
    return (f"With every offload on, the median round trip was {where} (profiles of one scenario, "
            f"MTU and traffic), {told}: {verdict}.")


def _apart(one: rtthist.Estimate, other: rtthist.Estimate) -> bool:
    """Whether two pooled medians' bootstrap intervals do not overlap."""
    if one.interval is None or other.interval is None:
        return False
    return one.interval[1] < other.interval[0] or other.interval[1] < one.interval[0]


def latency_charts(rows: Sequence[ProfileRow]) -> dict[str, bytes]:
    """One CDF chart per kind of probe: a panel per scenario, a line per profile."""
    charts = {}
    for kind, what in LATENCY_KINDS:
        places = {place: [r for r in found if _histograms(r, kind)]
                  for place, found in _by_place(rows, kind).items()}
        places = {place: found for place, found in places.items() if found}
        if not places:
            continue
        columns = min(2, len(places))
        rows_of_panels = (len(places) + columns - 1) // columns
        fig = Figure(figsize=(6.5 * columns, 3.6 * rows_of_panels), dpi=96, layout="constrained")
        FigureCanvasAgg(fig)
        axes = fig.subplots(rows_of_panels, columns, squeeze=False).ravel()
        for ax, (place, found) in zip(axes, places.items()):
            for row in found:
                xs, ys = rtthist.cdf(rtthist.pooled(_histograms(row, kind)))
                ax.step(xs, ys, where="post", label=f"{row.profile.name} {row.case.traffic.label}")
            ax.set_xscale("log")  # the tail is often 10× the median
            ax.set_ylim(0, 1.0)
            ax.set_title(place, fontsize=10)
            ax.set_xlabel("round trip, µs (log scale)", fontsize=8)
            ax.set_ylabel("share of round trips ≤ x", fontsize=8)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7, loc="lower right")
        for ax in axes[len(places):]:
            ax.set_visible(False)
        fig.suptitle(f"{what}: CDF pooled over runs", fontsize=11)
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png")
        charts[f"latency-{kind}"] = buffer.getvalue()
    return charts
