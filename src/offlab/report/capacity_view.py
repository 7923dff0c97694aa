"""The UDP capacity view: per scenario, one row per profile with the verified capacity,
its spread, the loss there and its cause, and what bounded it (capacity.py stores
these per sample; losscause.py reads the counters as causes).

Each row shows capacity_limits.verdict: the capacity over verified runs only, and
whether it may become advice, with the reason when not (validity.py reads the same
verdict).
"""

from __future__ import annotations

from typing import Sequence

from ..measure import capacity, losscause, sockbuf
from ..records import TrafficSpec
from ..analysis.stats import summary
from .section import Section
from .capacity_limits import MAX_CV, SATURATED_PCT, RECEIVER_APP, RECEIVER_CORE, SENDER_CORE, Limit, limits, verdict
from .model import ProfileRow
from .cells import Table, mean_std

SMALL_PAYLOAD = 200
"""Payloads up to this size are a packet-rate test (seed 000's "UDP 60"): shown in
packets per second too."""


TOOLS = {
    "iperf3": "iperf3 3.12 (one datagram per send and per read)",
    "udpload": "offlab-udpload (one datagram per send as iperf3 sends, or UDP_SEGMENT runs for "
               "\u201c-gso\u201d; read up to 64 messages per recvmmsg call, as a receiver tuned for "
               "rate reads)",
}
"""The load tools, as the section names them: a capacity is the tool's as much as the path's."""


def intro(generators: Sequence[str] = ("iperf3",)) -> str:
    probes = "; ".join(f"{sum(capacity.probe_timing(_spec(g))):g} s probes with {g}, "
                       f"{capacity.probe_timing(_spec(g))[0]:g} s of them warm-up" for g in generators)
    tools = "; ".join(TOOLS[g] for g in generators)
    return (
        "The highest offered UDP rate whose loss stayed at or below the bound, as RFC 2544's "
        f"throughput test finds it: a search over the offered rate ({probes}), stopping once the "
        f"knee is bracketed within {capacity.RESOLUTION:.0%} (the resolution) or after "
        f"{capacity.MAX_PROBES} probes, "
        "then one verification trial of the plan's full warm-up + duration, paced at the rate "
        "found and never above the highest rate a passing probe offered, also when the search "
        "was sender-bound "
        f"(up to {capacity.VERIFICATION_TRIALS - 1} steps of "
        f"{capacity.VERIFICATION_STEP_RESOLUTIONS} resolution steps lower while that trial loses "
        "too much). Capacity is what the receiver took in the verification trials that passed, "
        f"mean ± std over those runs only. Load from {tools}. Sockets ask for "
        f"{sockbuf.UDP_SOCKET_BUFFER // 2**20} MiB buffers (iperf3 -w), as a tuned test does. "
        "Every loss is given with its cause from the kernel's counters. \u201cBounded by\u201d "
        "names the saturated resource first — the core (or the receiving application) at "
        f"{SATURATED_PCT:.0f} % or more of a core at the limit, in most runs — and where the "
        "packets fell second, from the failed verification trial, else the failing probe "
        "nearest above the capacity (a veth sender's device queue overflows when the receiving "
        "CPU is behind, so where packets fell is not what was saturated). A row advises nothing "
        f"(\u26a0, with the reason) when a run failed verification, its CV exceeds {MAX_CV:.0%}, "
        "or it was bounded by a socket buffer while neither the receiving application nor its "
        "core was saturated."
    )


def _spec(generator: str) -> TrafficSpec:
    return TrafficSpec("udp", 1.0, udp_payload=1472, mode="capacity", generator=generator)  # type: ignore[arg-type]


def _bound_cell(found: Sequence[Limit], sender_bound: int) -> str:
    """The saturated resource first — the core (or application) at its limit in most
    runs, and how busy — then where the packets fell: "the receiver's core at 99 % (3 of
    3); packets fell at: sender device queue (3 of 3)". A veth sender's queue overflows
    when the receiving CPU is behind, so where packets fell is not what was saturated."""
    n = len(found)
    tops = [f.saturated[0] for f in found if f.saturated]
    top = max(tops, key=tops.count) if tops else None
    if top is not None and tops.count(top) * 2 > n:
        busy = [pct for f in found if f.saturated and f.saturated[0] == top
                for pct in [_pct_of(f, top)] if pct is not None]
        first = f"{top} at {sum(busy) / len(busy):.0f} % ({tops.count(top)} of {n})"
    elif any(f.sender_core_pct is not None or f.receiver_core_pct is not None for f in found):
        first = "no core at its limit"
    else:
        first = ""  # a store from before the cores were recorded
    second = f"the sender's maximum rate ({sender_bound} of {n})" if sender_bound * 2 > n else \
        f"packets fell at: {_cause_cell([f.causes for f in found])}"
    return "; ".join(part for part in (first, second) if part)


def _pct_of(limit: Limit, resource: str) -> float | None:
    return {RECEIVER_CORE: limit.receiver_core_pct, SENDER_CORE: limit.sender_core_pct,
            RECEIVER_APP: limit.receiver_app_pct}[resource]


def _cores_cell(found: Sequence[Limit]) -> str:
    """Mean busy share of the sender's core, the receiver's (softirq) and the receiving
    application at the limit, over the runs that recorded them: "tx 100 % · rx 97 % (soft 61 %) · app 35 %"."""
    def mean(values: list[float | None]) -> float | None:
        known = [v for v in values if v is not None]
        return sum(known) / len(known) if known else None

    tx, rx = mean([f.sender_core_pct for f in found]), mean([f.receiver_core_pct for f in found])
    soft, app = mean([f.receiver_soft_pct for f in found]), mean([f.receiver_app_pct for f in found])
    parts = ([f"tx {tx:.0f} %"] if tx is not None else []) + \
        ([f"rx {rx:.0f} %" + (f" (soft {soft:.0f} %)" if soft is not None else "")] if rx is not None else []) + \
        ([f"app {app:.0f} %"] if app is not None else [])
    return " · ".join(parts) or "—"


def _cause_cell(found: Sequence[losscause.LossCauses | None]) -> str:
    """The main cause over runs ("receiver socket buffer (3 of 3)"), or "none"."""
    mains = [c.main for c in found if c is not None and c.lost > 0 and c.main is not None]
    if not mains:
        return "none" if any(c is not None for c in found) else "—"
    top = max(losscause.CAUSES, key=mains.count)  # ties: the first in the causes' order
    return f"{top} ({mains.count(top)} of {len(found)})"


def _row(row: ProfileRow) -> tuple[str, ...]:
    samples = row.samples
    payload = row.case.traffic.udp_payload or 0
    judged = verdict(row)
    assert judged is not None  # capacity rows only
    losses = [s.loss_percent or 0.0 for s in samples]
    final = [losscause.from_sample_counters(s.counters, "loss") for s in samples]
    counted = capacity.verified(samples) or samples
    pps = summary([s.throughput_bps / 8 / payload / 1e6 for s in counted]) if payload else None
    bound = sum(1 for s in samples if s.counters.get("capacity_sender_bound") == 1.0)
    cv = judged.capacity.cv
    return (
        f"{row.profile.side}:{row.profile.name}", row.case.traffic.label,
        mean_std(judged.capacity) + ("" if judged.verified else " (none verified)")
        + (" \u26a0" if not judged.advisable else ""),
        f"{100 * cv:.0f} %" if cv is not None else "—",
        mean_std(pps) if pps is not None and payload <= SMALL_PAYLOAD else "—",
        f"{judged.verified} of {len(samples)}",
        f"{mean_std(summary(losses))}: {_cause_cell(final)}",
        _bound_cell(limits(row), bound),
        _cores_cell(limits(row)),
        f"{sum(len(s.probes) for s in samples) / len(samples):.1f}",
        f"{bound} of {len(samples)}" if bound else "no",
        "yes" if judged.advisable else f"no: {judged.reason}",
    )


HEADER = ("Profile", "Traffic", "Capacity (Gbit/s)", "CV", "Mpackets/s", "Verified",
          "Loss % there: cause", "Bounded by", "Cores at the limit", "Trials per run",
          "Sender-bound", "Advice from it")


def capacity_sections(rows: Sequence[ProfileRow]) -> list[Section]:
    places: dict[str, list[ProfileRow]] = {}
    for row in rows:
        if row.case.traffic.mode == "capacity":
            places.setdefault(f"{row.case.scenario_label} · MTU {row.case.mtu}", []).append(row)
    tables = [(f"{place}: UDP capacity at ≤ {found[0].case.traffic.loss_percent:g}% loss",
               Table(HEADER, tuple(_row(r) for r in found), align_left=2)) for place, found in places.items()]
    generators = sorted({r.case.traffic.generator for found in places.values() for r in found})
    return [Section("UDP capacity at bounded loss", intro(generators), tuple(tables))] if tables else []
