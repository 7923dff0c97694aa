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
from ..stats import summary
from ..studies import Section
from .capacity_limits import buffer_bound, limits
from .model import ProfileRow
from .tables import Table, mean_std

SMALL_PAYLOAD = 200
"""Payloads up to this size are a packet-rate test (seed 000's "UDP 60"): shown in
packets per second too."""


def intro() -> str:
    return (
        "The highest offered UDP rate whose loss stayed at or below the bound, as RFC 2544's "
        f"throughput test finds it: a search over the offered rate with {capacity.PROBE_SECONDS:g} s "
        f"probes ({capacity.PROBE_WARMUP_S:g} s of warm-up), stopping once the knee is bracketed "
        f"within {capacity.RESOLUTION:.0%} (the resolution) or after {capacity.MAX_PROBES} probes, "
        "then one verification trial of the plan's full warm-up + duration at the rate found "
        "(one step lower if that trial lost too much). Capacity is what the receiver took in the "
        "verification trial, mean ± std over runs. Sockets ask for "
        f"{sockbuf.UDP_SOCKET_BUFFER // 2**20} MiB buffers (iperf3 -w), as a tuned test does. "
        "Every loss is given with its cause from the kernel's counters; \u201cbounded by\u201d "
        "is the cause of loss in the failed verification trial, or else in the failing probe "
        "nearest above the capacity. A capacity bounded "
        "by a socket buffer while the receiver was not saturated is flagged \u26a0 and is never "
        "read as an offload effect."
    )


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
    busy = [f.receiver_app_pct for f in found if f.receiver_app_pct is not None]
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
        _cause_cell([f.causes for f in found]) if not bound * 2 > len(samples) else "the sender",
        f"{sum(busy) / len(busy):.0f} %" if busy else "—",
        f"{sum(len(s.probes) for s in samples) / len(samples):.1f}",
        f"{bound} of {row.n}" if bound else "no",
    )


HEADER = ("Profile", "Traffic", "Capacity (Gbit/s)", "CV", "Mpackets/s", "Verified",
          "Loss % there: cause", "Bounded by", "Receiver app at the limit", "Trials per run",
          "Sender-bound")


def capacity_sections(rows: Sequence[ProfileRow]) -> list[Section]:
    places: dict[str, list[ProfileRow]] = {}
    for row in rows:
        if row.case.traffic.mode == "capacity":
            places.setdefault(f"{row.case.scenario_label} · MTU {row.case.mtu}", []).append(row)
    tables = [(f"{place}: UDP capacity at ≤ {found[0].case.traffic.loss_percent:g}% loss",
               Table(HEADER, tuple(_row(r) for r in found), align_left=2)) for place, found in places.items()]
    return [Section("UDP capacity at bounded loss", intro(), tuple(tables))] if tables else []
