"""What a measured window saw: the record measure's iperf3 stream, capacity's trials
and udpload's tests all return beside their traffic result. It lives below the three so
that none of them imports another for it (measure calls capacity and udpload)."""

from __future__ import annotations

from dataclasses import dataclass

from ..records import CpuShare


@dataclass(frozen=True)
class Window:
    """What happened on the machine between the snapshots of a measured window."""

    started_at: float
    seconds: float
    shares: tuple[CpuShare, ...]
    counters: dict[str, float]
