"""UDP capacity at bounded loss: the highest offered rate whose loss stays at or below a
threshold, found as RFC 2544's throughput test finds it — a binary search over the
offered rate, each step one short measured trial ("probe").

`iperf3 -u -b 0` floods: on one machine the receiver livelocks and most of what is
sent is lost, and the "throughput" of such a run says how the sender and the receiver
share two cores, not what a profile can carry. The search instead reports the rate a
receiver keeps up with. Pure: the caller's `trial(rate)` runs the probe.

The search runs in log space (each step halves the ratio high/low), so its resolution
is relative: it stops when high/low ≤ 1 + resolution, or after `max_probes`. The first
probe is unlimited (the sender's own maximum): if that passes, the case is
sender-bound and its capacity is what the sender reached. Otherwise the second probe
offers what the receiver took during the first — a receiver that merely could not
keep up took about its capacity, one in livelock took less — and the bisection runs
above or below that guess. Below a failing guess the search gallops down until a
probe passes: one resolution step below the failure first, then steps that double in
log space, at most halving (a guess that failed by a hair is usually a step above the
knee, and halving at once would leave a bracket the probe budget cannot narrow
again: the capacity of such a run would land far below its neighbours'); then it
bisects between the last pass and the lowest failure.

The search's probes are short, so one lucky probe could set the knee. As RFC 2544's
throughput test asks, the rate found is then offered once more, paced, in a
full-length verification trial (`verify`) — never more than the highest passing probe
offered, also when the search was sender-bound; if that loses more than the bound the
rate steps down and is verified again. The figure reported is the verification
trial's, never a search probe's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from ..records import RateProbe

DEFAULT_LOSS_PERCENT = 0.1
DEFAULT_RESOLUTION = 0.05
DEFAULT_FLOOR_BPS = 1e6
UNLIMITED = 0.0
"""Offered rate of the first probe: as fast as the sender can (iperf3 -b 0)."""


class SearchError(ValueError):
    """A search rule that cannot work (threshold, resolution, probe budget)."""


Probe = RateProbe
"""One trial at an offered rate (0: unlimited), as measured."""


def passed(probe: Probe, threshold_percent: float) -> bool:
    return probe.loss_percent <= threshold_percent


@dataclass(frozen=True)
class SearchRule:
    loss_percent: float = DEFAULT_LOSS_PERCENT
    resolution: float = DEFAULT_RESOLUTION
    """Relative width of the final bracket: 0.05 → the knee is known within 5 %."""
    max_probes: int = 10
    floor_bps: float = DEFAULT_FLOOR_BPS
    """Below this the case has no capacity worth the name (every probe lost too much)."""

    def __post_init__(self) -> None:
        if not 0 <= self.loss_percent < 100:
            raise SearchError(f"loss threshold {self.loss_percent}% must be from 0 to below 100%")
        if not 0 < self.resolution < 1:
            raise SearchError(f"resolution {self.resolution} must be between 0 and 1 (e.g. 0.05)")
        if self.max_probes < 2:
            raise SearchError(f"max_probes {self.max_probes}: a search needs at least 2 probes")


@dataclass(frozen=True)
class Capacity:
    """How a search ended."""

    rate_bps: float
    """Received rate of the best passing probe; 0 when none passed."""
    offered_bps: float
    """Offered rate of that probe (the sender's maximum when sender-bound)."""
    probes: tuple[Probe, ...]
    bracket: tuple[float, float]
    """(highest passing, lowest failing) offered rate; the knee lies between."""
    sender_bound: bool
    """The unlimited probe passed: the sender, not the receiver, sets the capacity."""
    resolved: bool
    """The bracket narrowed to the rule's resolution (False: the probe budget ran out)."""


def search(trial: Callable[[float], Probe], rule: SearchRule = SearchRule()) -> Capacity:
    """The highest offered rate with loss ≤ rule.loss_percent, within rule.resolution."""
    first = trial(UNLIMITED)
    probes = [first]
    if passed(first, rule.loss_percent):
        return Capacity(first.received_bps, first.sent_bps, tuple(probes),
                        (first.sent_bps, math.inf), True, True)
    low, high = rule.floor_bps, max(first.sent_bps, rule.floor_bps)
    guess = min(max(first.received_bps, rule.floor_bps), high)
    best: Probe | None = None
    steps_down = 0
    while len(probes) < rule.max_probes and high / low > 1 + rule.resolution:
        if len(probes) == 1 and low < guess < high:
            rate = guess
        elif best is None and high / gallop_factor(steps_down, rule.resolution) > low:
            # Nothing passed yet: gallop down, do not bisect towards the floor.
            rate = high / gallop_factor(steps_down, rule.resolution)
            steps_down += 1
        else:
            rate = math.sqrt(low * high)
        probe = trial(rate)
        probes.append(probe)
        if passed(probe, rule.loss_percent):
            low = rate
            # The bracket climbs by offered rate, but a sender short of its offer (a busy
            # core) can pass a higher probe with less received: the capacity is the most
            # any passing probe delivered.
            if best is None or probe.received_bps > best.received_bps:
                best = probe
        else:
            high = rate
    resolved = high / low <= 1 + rule.resolution
    if best is None:
        return Capacity(0.0, 0.0, tuple(probes), (0.0, high), False, resolved)
    return Capacity(best.received_bps, best.offered_bps, tuple(probes), (low, high), False, resolved)


def gallop_factor(step: int, resolution: float) -> float:
    """The k-th step down below a failure while nothing has passed: (1 + resolution)
    raised to 2^k — one resolution step, then each step twice the last in log space —
    but never more than halving."""
    return 2.0 ** min(1.0, math.log2(1 + resolution) * 2 ** min(step, 30))


@dataclass(frozen=True)
class Verification:
    """The full-length trial at the rate a search found (RFC 2544's throughput trial)."""

    trial: Probe
    """The last verification trial: the passing one, or the last that failed."""
    passed: bool
    steps_down: int
    """Resolution steps below the search's rate before a trial passed (or gave up)."""
    tried: tuple[Probe, ...] = ()


def verify(trial: Callable[[float], Probe], found: Capacity, rule: SearchRule = SearchRule(),
           max_trials: int = 2, step_resolutions: int = 1) -> Verification:
    """Offer the found rate, paced, in `trial`; on loss above the bound step down by
    `step_resolutions` resolution steps and try again, at most `max_trials` trials in all.
    A sender-bound search is verified paced at what its unlimited probe sent: offered
    unlimited again, a sender that ran faster this time would verify a rate no probe
    passed. No trial offers more than the highest passing probe (`ceiling`). A search
    whose probes all failed (its budget ran out while halving) goes on halving from its
    lowest failure instead."""
    if max_trials < 1:
        raise SearchError(f"max_trials {max_trials}: verification needs at least one trial")
    nothing = found.offered_bps <= 0
    step_factor = 2.0 if nothing else (1 + rule.resolution) ** step_resolutions
    rate = max(found.bracket[1] / 2 if nothing else min(found.offered_bps, ceiling(found, rule)),
               rule.floor_bps)
    tried: list[Probe] = []
    for step in range(max_trials):
        probe = trial(rate)
        tried.append(probe)
        if passed(probe, rule.loss_percent):
            return Verification(probe, True, step, tuple(tried))
        rate = max(rate / step_factor, rule.floor_bps)
    return Verification(tried[-1], False, max_trials - 1, tuple(tried))


def offered(probe: Probe) -> float:
    """What a probe offered: its paced rate, or for the unlimited probe what it sent."""
    return probe.offered_bps or probe.sent_bps


def ceiling(found: Capacity, rule: SearchRule = SearchRule()) -> float:
    """The highest rate a passing search probe offered (0 when none passed): the most a
    verification trial may offer."""
    return max((offered(p) for p in found.probes if passed(p, rule.loss_percent)), default=0.0)


def monotone(probes: tuple[Probe, ...], rule: SearchRule = SearchRule()) -> bool:
    """Whether loss rose with the offered rate: no passing probe offered more than a
    failing one. A search assumes it; a receiver whose softirq starves its application
    on a shared core can lose more at a lower rate (the bracket is then one of several
    knees, and runs of the same case land on different ones)."""
    passing = [offered(p) for p in probes if passed(p, rule.loss_percent)]
    failing = [offered(p) for p in probes if not passed(p, rule.loss_percent)]
    return not passing or not failing or max(passing) <= min(failing)


def limiting_probe(found: Capacity, rule: SearchRule = SearchRule()) -> Probe | None:
    """The failing probe nearest above the capacity: the one whose loss says what bounds
    it (None when sender-bound or nothing failed)."""
    failing = [p for p in found.probes if not passed(p, rule.loss_percent)]
    if found.sender_bound or not failing:
        return None
    above = [p for p in failing if p.offered_bps and p.offered_bps >= found.offered_bps]
    return min(above, key=lambda p: p.offered_bps) if above else failing[0]


def overloaded(loss_percent: float | None, rule: SearchRule = SearchRule()) -> bool:
    """A UDP sample that lost more than the threshold measured overload, not a profile."""
    return loss_percent is not None and loss_percent > rule.loss_percent
