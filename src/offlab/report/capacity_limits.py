"""What bounded a UDP capacity, per sample and per row.

A capacity whose limiting probe lost mostly to a socket buffer while the receiving
application was not saturated measured a buffer and the scheduler, not the path: the
capacity view flags such a row, and `buffer_bound` keeps it out of the advice
(validity.py). Imports nothing of the report, so validity.py can use it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .. import losscause

if TYPE_CHECKING:
    from .model import ProfileRow

SATURATED_PCT = 90.0
"""A receiving application above this share of one core at the limit was saturated: its
buffer overflowed because it could not go faster, which is the path's limit."""


@dataclass(frozen=True)
class Limit:
    """What bounded one sample's capacity."""

    causes: losscause.LossCauses | None
    receiver_app_pct: float | None

    @property
    def buffer_bound(self) -> bool:
        """Lost mostly to a socket buffer, with the receiver not saturated."""
        if self.causes is None or not self.causes.socket_buffer_bound:
            return False
        return self.receiver_app_pct is None or self.receiver_app_pct < SATURATED_PCT


def limits(row: "ProfileRow") -> list[Limit]:
    return [Limit(losscause.from_sample_counters(s.counters, "limit_loss"),
                  s.counters.get("limit_receiver_app_pct")) for s in row.samples]


def buffer_bound(row: "ProfileRow") -> bool:
    """Most of a capacity row's samples were bounded by a socket buffer, not the path."""
    if row.case.traffic.mode != "capacity":
        return False
    found = limits(row)
    return sum(limit.buffer_bound for limit in found) * 2 > len(found)


