"""What bounded a UDP capacity, per sample and per row, and whether a row may become
advice.

"Bounded by" names the saturated resource first — a core at its limit, and whose — and
where the packets fell second: a veth sender's device queue overflows when the
receiving CPU is behind, so "sender device queue" under a receiver core at 99 % is the
receiver's limit, told by where its backlog spilled. A capacity whose limiting probe
lost mostly to a socket buffer while neither the receiving application nor the
receiver's core was saturated measured a buffer and the scheduler, not the path.

`verdict` is the row's one answer for the report and the advice (validity.py): the
capacity over verified runs only, and `advisable` with the reason when it is not
(runs that failed verification, one run, a buffer-bound limit, or a CV above
`MAX_CV`, with what the counters say made the runs differ). Imports nothing of the
report, so validity.py can use it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..measure import capacity, losscause

if TYPE_CHECKING:
    from ..analysis.stats import Summary
    from .model import ProfileRow

SATURATED_PCT = 90.0
"""A receiving application, or an endpoint's core, above this share of one core at the
limit was saturated: the packets fell because that resource could not go faster."""
MAX_CV = 0.15
"""A capacity row whose verified runs spread more than this (std / mean) is shown with
why and advises nothing: its runs found different knees, not one capacity."""

RECEIVER_CORE = "the receiver's core"
SENDER_CORE = "the sender's core"
RECEIVER_APP = "the receiving application"


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
    def saturated(self) -> tuple[str, ...]:
        """The resources at their limit, busiest first (a core before the application
        on it: the receive softirq shares the receiver's core and pre-empts the reader)."""
        found = [(pct, name) for name, pct in ((RECEIVER_CORE, self.receiver_core_pct),
                                                (SENDER_CORE, self.sender_core_pct),
                                                (RECEIVER_APP, self.receiver_app_pct))
                 if pct is not None and pct >= SATURATED_PCT]
        cores = sorted((f for f in found if f[1] != RECEIVER_APP), reverse=True)
        return tuple(name for _, name in cores + [f for f in found if f[1] == RECEIVER_APP])

    @property
    def receiver_saturated(self) -> bool:
        return RECEIVER_CORE in self.saturated or RECEIVER_APP in self.saturated

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


@dataclass(frozen=True)
class Verdict:
    """A capacity row as the report shows it and the advice may use it."""

    capacity: "Summary"
    """Gbit/s over the verified runs only (all runs when none verified)."""
    verified: int
    runs: int
    reasons: tuple[str, ...]
    """Why the row advises nothing, each a sentence; empty when it may."""

    @property
    def advisable(self) -> bool:
        return not self.reasons

    @property
    def reason(self) -> str | None:
        return "; ".join(self.reasons) or None


def verdict(row: "ProfileRow") -> Verdict | None:
    """The capacity row's verdict; None for a row that is not a UDP capacity."""
    if row.case.traffic.mode != "capacity":
        return None
    runs = len(row.samples)
    verified = len(capacity.verified(row.samples))
    reasons: list[str] = []
    if verified < runs:
        reasons.append(f"{runs - verified} of {runs} runs lost more than "
                       f"{row.case.traffic.loss_percent:g} % in every verification trial, "
                       "so the rate found is not sustained in every run")
    if verified == 1:
        reasons.append("one verified run gives no spread to judge a difference by")
    if buffer_bound(row):
        reasons.append("bounded by a socket buffer that overflowed while the receiving application "
                       "was not saturated: a scheduling hiccup on a shared machine, not the path")
    cv = row.throughput.cv if verified > 1 else None
    if cv is not None and cv > MAX_CV:
        reasons.append(f"CV {100 * cv:.0f} % above {100 * MAX_CV:.0f} %: {_why_spread(row)}")
    return Verdict(row.throughput, verified, runs, tuple(reasons))


def _why_spread(row: "ProfileRow") -> str:
    """What the counters say made a row's verified runs differ."""
    counted = capacity.verified(row.samples)
    n = len(counted)
    rising = sum(1 for s in counted if s.counters.get("capacity_monotone") == 0.0)
    if rising:
        return (f"loss was not monotone in the offered rate in {rising} of {n} runs (a probe "
                "passed above one that failed), so the search found different knees — on a "
                "shared core the receive softirq starves the receiving application unevenly")
    bound = sum(1 for s in counted if s.counters.get("capacity_sender_bound") == 1.0)
    if 0 < bound < n:
        return f"{bound} of {n} runs were bounded by the sender, the others by the path"
    stepped = sum(1 for s in counted if s.counters.get("capacity_steps_down", 0.0) > 0)
    if 0 < stepped < n:
        return f"{stepped} of {n} runs verified only after stepping down"
    return "the runs differ with no cause in the counters (a shared, loaded machine)"
