"""Drops and retransmits on the path of each case, as validity: every drop counter a
sample kept (interfaces, qdiscs, the per-CPU backlog, device counters, the TCP/IP
stack's own), per sample and host, and the sender's retransmitted share of its segments
(RFC 6349's TCP efficiency is 100 % minus it).

A TCP stream between two hosts of the lab has no reason to lose packets inside a host:
its congestion control fills queues, and a queue that overflows inside a host (a veth
ring, a backlog, a qdisc) makes TCP recover from loss, which is then what its rate
measures. Such a case is named with the counter and where it grew, and every
difference it takes part in is set apart (validity.py), whichever way it points.

UDP rows are judged by their own loss bound (validity.overloaded), and a capacity
search drops on purpose while it looks for the knee, so neither is judged here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from ..measure.counters import is_drop, is_pressure
from ..analysis.stats import Summary, summary
from .cells import Table, mean_std
from .section import Section

if TYPE_CHECKING:
    from .model import ProfileRow

DROP_SHARE = 1e-4
"""A TCP case drops "where it should not" when its path's drop counters grew by more than
one in 10 000 of the segments it sent (mean per sample) …"""
DROP_FLOOR = 10.0
"""… and by more than this many packets per sample (a stray drop is no pattern)."""
PACED_DROP_SHARE = 1e-2
"""A paced run (service demand) has its rate set by its pace, not by loss recovery: its
drops bias only its CPU per Gbit/s, by the work of resending them — judged above 1 % of
its segments (well inside the 5 % noise threshold below it)."""


@dataclass(frozen=True)
class Growth:
    """One counter over a case's samples: "tx:dev.ofl-v0.tx_drop"."""

    name: str
    per_sample: float
    """Mean growth per sample (samples where it did not grow count as 0)."""
    samples: int
    """Samples in which it grew."""

    @property
    def host(self) -> str:
        return self.name.partition(":")[0]

    @property
    def counter(self) -> str:
        return self.name.partition(":")[2]


@dataclass(frozen=True)
class PathDrops:
    """What a case's path dropped and retransmitted, per sample."""

    drops: tuple[Growth, ...]
    """Drop counters that grew, largest first."""
    pressure: tuple[Growth, ...]
    """Squeezes and requeues: a queue under pressure, nothing lost."""
    segments: float | None
    """The sender's TCP segments per sample (Tcp.OutSegs), None without TCP."""
    retrans_pct: Summary | None
    """Retransmitted segments as a share of segments sent, per sample, percent."""
    samples: int

    @property
    def per_sample(self) -> float:
        return sum(g.per_sample for g in self.drops)

    @property
    def share(self) -> float | None:
        """Drops as a fraction of the segments sent."""
        return self.per_sample / self.segments if self.segments else None

    @property
    def efficiency_pct(self) -> float | None:
        """RFC 6349 TCP efficiency: the share of segments that were not retransmits."""
        return None if self.retrans_pct is None else 100.0 - self.retrans_pct.mean

    def where(self, limit: int = 2) -> str:
        """"tx:dev.ofl-v0.tx_drop +1.8k per sample in 3 of 3 samples; …"."""
        return "; ".join(f"{g.name} +{count_text(g.per_sample)} per sample in {g.samples} of "
                         f"{self.samples} samples" for g in self.drops[:limit])


def count_text(value: float) -> str:
    """1840 → "1.8k", 12 → "12", 0.33 → "0.33"."""
    if value >= 1e6:
        return f"{value / 1e6:.1f}M"
    if value >= 1e3:
        return f"{value / 1e3:.1f}k"
    return f"{value:.0f}" if value >= 10 else f"{value:.2g}"


def path_drops(samples: Sequence) -> PathDrops:
    """Drops, pressure and retransmit share of a case from its samples' counters."""
    n = max(len(samples), 1)
    totals: dict[str, list[float]] = {}
    for sample in samples:
        for name, value in sample.counters.items():
            _, sep, counter = name.partition(":")
            if sep and value > 0 and (is_drop(counter) or is_pressure(counter)):
                totals.setdefault(name, []).append(float(value))
    grown = [Growth(name, sum(values) / n, len(values)) for name, values in totals.items()]
    grown.sort(key=lambda g: -g.per_sample)
    segments = [s.counters.get("tcp_segments") for s in samples]
    shares = [s.counters.get("tcp_retrans_pct") for s in samples]
    return PathDrops(
        drops=tuple(g for g in grown if is_drop(g.counter)),
        pressure=tuple(g for g in grown if is_pressure(g.counter)),
        segments=sum(segments) / n if segments and None not in segments else None,  # type: ignore[arg-type]
        retrans_pct=summary(shares) if shares and None not in shares else None,  # type: ignore[arg-type]
        samples=len(samples),
    )


def judged(row: "ProfileRow") -> bool:
    """Rows whose path must not drop: TCP streams and request/response."""
    return row.case.traffic.protocol == "tcp"


def drops_where_none_belong(row: "ProfileRow") -> PathDrops | None:
    """The row's drops when its path dropped where it should not, else None."""
    if not judged(row):
        return None
    found = path_drops(row.samples)
    share = PACED_DROP_SHARE if row.case.traffic.service_demand else DROP_SHARE
    limit = max(DROP_FLOOR, share * found.segments) if found.segments else DROP_FLOOR
    return found if found.per_sample > limit else None


def retrans_cell(row: "ProfileRow") -> str:
    """The case tables' TCP cell: retransmits per sample and their share of segments."""
    found = path_drops(row.samples)
    count = mean_std(row.retransmits, decimals=0)
    if found.retrans_pct is None:
        return count
    return f"{count} ({share_text(found.retrans_pct.mean)})"


def share_text(percent: float) -> str:
    """0.31 → "0.31%", 7.8e-05 → "<0.001%", 0 → "0%"."""
    if percent == 0:
        return "0%"
    return "<0.001%" if percent < 0.001 else f"{percent:.2g}%"


def drops_cell(row: "ProfileRow") -> str:
    """The case tables' drop cell: drops per sample on the path, the largest counter
    named when the row is judged to drop where it should not."""
    found = path_drops(row.samples)
    if not found.drops:
        return "0"
    text = count_text(found.per_sample)
    if drops_where_none_belong(row) is not None:
        return f"{text} ⚠ {found.drops[0].name}"
    return text


DROPS_INTRO = (
    "Every drop counter of every host on the path, grown per sample (warm-up included: a "
    "drop is a drop whenever it happened): interfaces (/proc/net/dev), qdiscs (`tc -s "
    "qdisc`), the per-CPU backlog (/proc/net/softnet_stat, once per machine), the devices' "
    "own counters (`ethtool -S`) and the stack's (/proc/net/snmp and netstat, as `nstat` "
    "reads them); squeezes and requeues beside them (a queue under pressure, nothing lost). "
    "Retransmits are the sender's share of the segments it sent; RFC 6349's TCP efficiency "
    "is 100% minus it. A TCP case that dropped more than 1 in 10 000 of its segments inside "
    "a host is marked ⚠ and every difference it takes part in is set apart from the advice "
    "(drops are summed over counters: a frame a tunnel's underlay dropped may also count at "
    "the tunnel device).")


def drops_sections(rows: Sequence["ProfileRow"]) -> list:
    """One table: per case, its retransmit share and efficiency, then each drop or
    pressure counter that grew, per sample, by host."""
    body = []
    for row in rows:
        found = path_drops(row.samples)
        lossy = judged(row) and drops_where_none_belong(row) is not None
        retrans = (f"{share_text(found.retrans_pct.mean)} (efficiency {found.efficiency_pct:.2f}%)"
                   if found.retrans_pct is not None and judged(row) else "–")
        verdict = "⚠ drops where none belong" if lossy else ("not judged (UDP)" if not judged(row) else "ok")
        listed = [*found.drops[:4], *found.pressure[:2]]
        if not listed:
            body.append((row.case.key, retrans, verdict, "none grew", "", ""))
        for number, growth in enumerate(listed):
            kind = "drop" if growth in found.drops else "pressure"
            body.append((row.case.key if number == 0 else "", retrans if number == 0 else "",
                         verdict if number == 0 else "", f"{growth.counter} ({kind})", growth.host,
                         f"{count_text(growth.per_sample)} ({growth.samples}/{found.samples})"))
    if not body:
        return []
    table = Table(("Case", "Retransmits, % of segments", "Verdict", "Counter", "Host",
                   "Per sample (samples grown)"), tuple(body), align_left=5)
    return [Section("Drops and retransmits on the path", DROPS_INTRO, (("Per case", table),))]
