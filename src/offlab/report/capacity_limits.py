"""What bounded a UDP capacity, per sample and per row.

A capacity whose limiting probe lost mostly to a socket buffer while neither the
receiving application nor the receiver's core was saturated measured a buffer and the
scheduler, not the path: the capacity view flags such a row, and `buffer_bound` keeps
it out of the advice (validity.py). A buffer that overflowed under a saturated
receiver core — the receive softirq, veth's NAPI thread and the application share it —
is the receiver's limit. Imports nothing of the report, so validity.py can use it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .. import losscause

if TYPE_CHECKING:
    from .model import ProfileRow

SATURATED_PCT = 90.0
"""A receiving application, or the receiver's core, above this share of one core at the
limit was saturated: the buffer overflowed because the receiver could not go faster,
which is the path's limit."""


@dataclass(frozen=True)
class Limit:
    """What bounded one sample's capacity."""

    causes: losscause.LossCauses | None
    receiver_app_pct: float | None
    sender_core_pct: float | None = None
    receiver_core_pct: float | None = None
    """How busy each endpoint's core was at the limit, niced background work left out."""
    receiver_soft_pct: float | None = None

    @property
    def receiver_saturated(self) -> bool:
        return any(v is not None and v >= SATURATED_PCT for v in (self.receiver_app_pct, self.receiver_core_pct))

    @property
    def buffer_bound(self) -> bool:
        """Lost mostly to a socket buffer, with the receiver not saturated."""
        if self.causes is None or not self.causes.socket_buffer_bound:
            return False
        return not self.receiver_saturated


def limits(row: "ProfileRow") -> list[Limit]:
    return [Limit(losscause.from_sample_counters(s.counters, "limit_loss"), s.counters.get("limit_receiver_app_pct"),
                  s.counters.get("limit_sender_core_pct"), s.counters.get("limit_receiver_core_pct"),
                  s.counters.get("limit_receiver_core_soft_pct")) for s in row.samples]


def buffer_bound(row: "ProfileRow") -> bool:
    """Most of a capacity row's samples were bounded by a socket buffer, not the path."""
    if row.case.traffic.mode != "capacity":
        return False
    found = limits(row)
    return sum(limit.buffer_bound for limit in found) * 2 > len(found)


