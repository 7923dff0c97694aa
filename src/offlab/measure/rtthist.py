"""Round-trip times kept as log-binned histograms, pooled over repetitions, with
percentiles reported only where the samples carry them.

Each repetition stores its round trips as a histogram with 16 bins per octave (each bin
4.4 % wide, so a percentile read from it is within ±2.2 % of the exact one) in the
sample's counters ("rtt_hist_<bin>"), which keeps every round trip's information in a
few hundred numbers. A row's percentiles pool the histograms of its repetitions.

A tail percentile needs enough round trips behind it: the p-th percentile of n values
rests on n·(1 − p) values above it, so p99 is reported from 100 round trips and p99.9
from 1000 (`MIN_SAMPLES`), never from fewer — below that it is the maximum of a
handful. Its 95 % CI is a two-level bootstrap: repetitions are resampled, then round
trips within each (round trips of one repetition are not independent of each other; a
repetition's conditions — the build, the machine's load — move all of them, so the
interval must carry the between-repetition spread, not only the within one).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

import numpy as np

BINS_PER_OCTAVE = 16
MIN_SAMPLES = {50.0: 10, 99.0: 100, 99.9: 1000}
"""Round trips a percentile needs before it is reported."""
BOOTSTRAP_RESAMPLES = 400
_SEED = 29
"""Fixed, so a report of the same store is the same report."""

Histogram = dict[int, int]


def bin_of(value_us: float) -> int:
    return math.floor(BINS_PER_OCTAVE * math.log2(max(value_us, 1e-3)))


def value_of(bin_index: int) -> float:
    """The bin's geometric centre, µs."""
    return 2.0 ** ((bin_index + 0.5) / BINS_PER_OCTAVE)


def histogram(values_us: Iterable[float]) -> Histogram:
    found: Histogram = {}
    for value in values_us:
        index = bin_of(value)
        found[index] = found.get(index, 0) + 1
    return found


def to_counters(hist: Mapping[int, int], prefix: str) -> dict[str, float]:
    return {f"{prefix}_hist_{index}": float(count) for index, count in hist.items()}


def from_counters(counters: Mapping[str, float], prefix: str) -> Histogram:
    marker = f"{prefix}_hist_"
    return {int(name[len(marker):]): int(value) for name, value in counters.items()
            if name.startswith(marker) and value > 0}


def pooled(hists: Iterable[Mapping[int, int]]) -> Histogram:
    total: Histogram = {}
    for hist in hists:
        for index, count in hist.items():
            total[index] = total.get(index, 0) + count
    return total


def percentile(hist: Mapping[int, int], q: float) -> float:
    """Nearest-rank percentile (as latency.percentile) read from the histogram."""
    n = sum(hist.values())
    if n == 0:
        raise ValueError("percentile of an empty histogram")
    rank = max(1, math.ceil(q / 100.0 * n))
    seen = 0
    for index in sorted(hist):
        seen += hist[index]
        if seen >= rank:
            return value_of(index)
    raise AssertionError("unreachable")


@dataclass(frozen=True)
class Estimate:
    """A percentile pooled over repetitions, or why it is not given."""

    q: float
    n: int
    value: float | None
    """None when n is below MIN_SAMPLES[q]."""
    interval: tuple[float, float] | None = None
    """95 % two-level bootstrap interval (needs two or more repetitions)."""


def estimate(per_run: Sequence[Mapping[int, int]], q: float) -> Estimate:
    runs = [h for h in per_run if sum(h.values())]
    n = sum(sum(h.values()) for h in runs)
    if n < MIN_SAMPLES.get(q, math.ceil(10 / (1 - q / 100.0))):
        return Estimate(q, n, None)
    value = percentile(pooled(runs), q)
    return Estimate(q, n, value, bootstrap(runs, q) if len(runs) > 1 else None)


def bootstrap(runs: Sequence[Mapping[int, int]], q: float,
              resamples: int = BOOTSTRAP_RESAMPLES) -> tuple[float, float]:
    """2.5 % and 97.5 % quantiles of the pooled percentile over resampled repetitions,
    each then resampled within (multinomially from its own histogram)."""
    rng = np.random.default_rng(_SEED)
    bins = np.array(sorted(set().union(*runs)))
    weights = np.array([[hist.get(int(b), 0) for b in bins] for hist in runs], dtype=float)
    sizes = weights.sum(axis=1).astype(int)
    weights /= weights.sum(axis=1, keepdims=True)
    found = np.empty(resamples)
    for r in range(resamples):
        chosen = rng.integers(0, len(runs), len(runs))
        counts = sum(rng.multinomial(sizes[pick], weights[pick]) for pick in chosen)
        cumulative = np.cumsum(counts)
        rank = max(1, math.ceil(q / 100.0 * cumulative[-1]))
        found[r] = value_of(int(bins[np.searchsorted(cumulative, rank)]))
    low, high = np.quantile(found, [0.025, 0.975])
    return float(low), float(high)


def cdf(hist: Mapping[int, int]) -> tuple[list[float], list[float]]:
    """(upper edge of each bin, share of round trips at or below it), for a CDF plot."""
    n = sum(hist.values())
    xs, ys, seen = [], [], 0
    for index in sorted(hist):
        seen += hist[index]
        xs.append(2.0 ** ((index + 1) / BINS_PER_OCTAVE))
        ys.append(seen / n)
    return xs, ys
