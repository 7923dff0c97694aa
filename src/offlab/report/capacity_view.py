"""The UDP capacity view: per scenario, one row per profile with the verified capacity,
its spread, the loss there and its cause, and what bounded it (capacity.py stores
these per sample; losscause.py reads the counters as causes).

A capacity whose limiting probe lost mostly to a socket buffer while the receiving
application was not saturated measured a buffer and the scheduler, not the path: such
a row is flagged here, and `buffer_bound` keeps it out of the advice (validity.py).
"""

from __future__ import annotations

from typing import Sequence

from .. import capacity, losscause, sockbuf
from ..records import TrafficSpec
from ..stats import summary
from ..studies import Section
from .capacity_limits import SATURATED_PCT, Limit, buffer_bound, limits
from .model import ProfileRow
from .tables import Table, mean_std

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
        "then one verification trial of the plan's full warm-up + duration at the rate found "
        f"(up to {capacity.VERIFICATION_TRIALS - 1} steps of "
        f"{capacity.VERIFICATION_STEP_RESOLUTIONS} resolution steps lower while that trial loses too much). Capacity is what the receiver took in the "
        f"verification trial, mean ± std over runs. Load from {tools}. Sockets ask for "
        f"{sockbuf.UDP_SOCKET_BUFFER // 2**20} MiB buffers (iperf3 -w), as a tuned test does. "
        "Every loss is given with its cause from the kernel's counters; \u201cbounded by\u201d "
        "is the cause of loss in the failed verification trial, or else in the failing probe "
        "nearest above the capacity, with how busy the sender's and the receiver's cores were "
        "then (the receiver's softirq share in brackets). A capacity bounded by a socket buffer "
        "while neither the receiving application nor its core was saturated is flagged \u26a0 "
        "and is never read as an offload effect."
    )


def _spec(generator: str) -> TrafficSpec:
    return TrafficSpec("udp", 1.0, udp_payload=1472, mode="capacity", generator=generator)  # type: ignore[arg-type]


def _bound_cell(found: Sequence[Limit]) -> str:
    """The main cause at the limit; when that is the receiver's socket buffer under a
    saturated receiver core, the core is what bounded it: the receive softirq pre-empts
    the reader, so its buffer overflows although the reader itself is not busy."""
    cause = _cause_cell([f.causes for f in found])
    starved = [f for f in found if f.causes is not None and f.causes.main == losscause.RCVBUF
               and f.receiver_core_pct is not None and f.receiver_core_pct >= SATURATED_PCT]
    if starved and len(starved) * 2 > len(found):
        return f"the receiver's core, saturated ({len(starved)} of {len(found)}): {cause}"
    return cause


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
    found = limits(row)
    verified = sum(1 for s in samples if s.counters.get("capacity_verified") == 1.0)
    losses = [s.loss_percent or 0.0 for s in samples]
    final = [losscause.from_sample_counters(s.counters, "loss") for s in samples]
    pps = summary([s.throughput_bps / 8 / payload / 1e6 for s in samples]) if payload else None
    bound = sum(1 for s in samples if s.counters.get("capacity_sender_bound") == 1.0)
    cv = row.throughput.cv
    return (
        f"{row.profile.side}:{row.profile.name}", row.case.traffic.label,
        mean_std(row.throughput) + (" \u26a0" if buffer_bound(row) else ""),
        f"{100 * cv:.0f} %" if cv is not None else "—",
        mean_std(pps) if pps is not None and payload <= SMALL_PAYLOAD else "—",
        f"{verified} of {len(samples)}",
        f"{mean_std(summary(losses))}: {_cause_cell(final)}",
        _bound_cell(found) if not bound * 2 > len(samples) else "the sender",
        _cores_cell(found),
        f"{sum(len(s.probes) for s in samples) / len(samples):.1f}",
        f"{bound} of {row.n}" if bound else "no",
    )


HEADER = ("Profile", "Traffic", "Capacity (Gbit/s)", "CV", "Mpackets/s", "Verified",
          "Loss % there: cause", "Bounded by", "Cores at the limit", "Trials per run",
          "Sender-bound")


def capacity_sections(rows: Sequence[ProfileRow]) -> list[Section]:
    places: dict[str, list[ProfileRow]] = {}
    for row in rows:
        if row.case.traffic.mode == "capacity":
            places.setdefault(f"{row.case.scenario_label} · MTU {row.case.mtu}", []).append(row)
    tables = [(f"{place}: UDP capacity at ≤ {found[0].case.traffic.loss_percent:g}% loss",
               Table(HEADER, tuple(_row(r) for r in found), align_left=2)) for place, found in places.items()]
    generators = sorted({r.case.traffic.generator for found in places.values() for r in found})
    return [Section("UDP capacity at bounded loss", intro(generators), tuple(tables))] if tables else []
