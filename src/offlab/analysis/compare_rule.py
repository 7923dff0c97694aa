"""When `offlab compare` calls a case changed: a rule that does not cry wolf.

Within one run a case's repetitions are interleaved within one build of its topology,
so their spread is the within-build noise. Two runs are two builds (and two states of
the machine): a case's mean moves between them by more than its repetitions' spread
says — the vxlan cases of three quick runs moved +4 % to +8 % together. A test that
knows only the within-run spread then flags about four cases in twenty-two of an A/A
comparison where one is expected by chance.

The rule, per metric (throughput; CPU per Gbit/s):

1. Each matched case's relative change d = mean_B / mean_A − 1 has a within-run
   variance v from both runs' spreads (delta method).
2. A between-build variance τ² common to all cases is estimated from the comparison
   itself, robustly: the τ² ≥ 0 at which the median of d² / (v + τ²) over the cases is
   the median of a χ²(1) variable (0.455) — what it is when every case is noise. A
   minority of cases that really changed barely move a median.
3. Each case is tested with t = d / √(v + τ²) (Student's t with the within part's Welch
   degrees of freedom, conservative): "significant" at p < 0.05, so an A/A comparison
   flags about 5 % of its tests — what chance allows, stated beside the count with its
   binomial 95 % bound. For a gate (`--fail-on-regression`) that is still too often (one
   case in twenty), so the gate takes only "discoveries": significant with the false
   discovery rate over all tests of both metrics held at 5 % (Benjamini–Hochberg), which
   an A/A comparison passes about 19 times in 20.
4. The smallest change the comparison could have detected in each case (80 % power at
   α = 0.05) is 2.8 · √(v + τ²): the "minimum detectable effect" shown beside it.

Pure functions; `comparison.py` applies them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from scipy import stats as scistats

from .stats import Summary, adjusted_p_values

ALPHA = 0.05
FDR = 0.05
CHI2_1_MEDIAN = 0.4549364
MDE_FACTOR = 1.959964 + 0.841621
"""z(α/2 = 0.025) + z(power 0.8)."""


@dataclass(frozen=True)
class Change:
    """One case's relative change of one metric, B against A."""

    ratio: float
    within: float
    """Variance of `ratio` from the two runs' own spreads."""
    df: float
    """Welch–Satterthwaite degrees of freedom of the within part."""


@dataclass(frozen=True)
class Verdict:
    change: Change
    between: float
    """The between-build variance τ² added (the same for every case of the metric)."""
    p_value: float
    flagged: bool
    """Significant: p < 0.05 with the between-build variance in the test."""
    discovery: bool = False
    """Significant with the false discovery rate over all tests held at 5 % (the gate's)."""

    @property
    def mde(self) -> float:
        """Smallest |ratio| this case could have shown (80 % power, α 0.05)."""
        return MDE_FACTOR * math.sqrt(self.change.within + self.between)


def change(a: Summary, b: Summary) -> Change | None:
    """B's change against A with its within-run variance; None without two runs each or
    with a zero baseline."""
    if a.std is None or b.std is None or a.mean == 0:
        return None
    va, vb = a.std ** 2 / a.n, b.std ** 2 / b.n
    ratio = b.mean / a.mean - 1
    within = vb / a.mean ** 2 + (b.mean ** 2 / a.mean ** 4) * va
    parts = (vb / a.mean ** 2, (b.mean ** 2 / a.mean ** 4) * va)
    denominator = sum(p ** 2 / (n - 1) for p, n in zip(parts, (b.n, a.n)))
    df = within ** 2 / denominator if denominator > 0 else float(a.n + b.n - 2)
    return Change(ratio, within, df)


def between_build_variance(changes: Sequence[Change]) -> float:
    """τ² ≥ 0 such that median(d² / (v + τ²)) = the χ²(1) median; 0 when the changes are
    no wider than their within-run spread (or too few cases to say: fewer than three)."""
    if len(changes) < 3:
        return 0.0

    def median_ratio(tau2: float) -> float:
        values = sorted(c.ratio ** 2 / max(c.within + tau2, 1e-18) for c in changes)
        mid = len(values) // 2
        return values[mid] if len(values) % 2 else 0.5 * (values[mid - 1] + values[mid])

    if median_ratio(0.0) <= CHI2_1_MEDIAN:
        return 0.0
    low, high = 0.0, max(c.ratio ** 2 for c in changes) / CHI2_1_MEDIAN + 1e-12
    for _ in range(60):
        mid = 0.5 * (low + high)
        low, high = (mid, high) if median_ratio(mid) > CHI2_1_MEDIAN else (low, mid)
    return high


def judge(groups: Sequence[Sequence[Change | None]]) -> list[list[Verdict | None]]:
    """Verdicts for several metrics' changes (one list per metric, cases in order): τ²
    per metric, the false discovery rate held over every test of every metric."""
    pending: list[tuple[int, int, Change, float, float]] = []
    for g, changes in enumerate(groups):
        found = [c for c in changes if c is not None]
        tau2 = between_build_variance(found)
        for i, c in enumerate(changes):
            if c is not None:
                scale = math.sqrt(c.within + tau2)
                t = abs(c.ratio) / scale if scale > 0 else (math.inf if c.ratio else 0.0)
                pending.append((g, i, c, tau2, float(2 * scistats.t.sf(t, max(c.df, 1.0)))))
    discoveries = benjamini_hochberg([p for *_, p in pending], FDR)
    out: list[list[Verdict | None]] = [[None] * len(changes) for changes in groups]
    for (g, i, c, tau2, p), found in zip(pending, discoveries):
        out[g][i] = Verdict(c, tau2, p, p < ALPHA, found)
    return out


def chance_bound(tests: int, alpha: float = ALPHA) -> int:
    """Most significant tests an A/A comparison gives 95 % of the time (binomial)."""
    return int(scistats.binom.ppf(0.95, tests, alpha)) if tests else 0


def benjamini_hochberg(p_values: Sequence[float], q: float) -> list[bool]:
    """Which p-values are discoveries at false discovery rate q (the Benjamini–Hochberg
    adjustment, stats.adjusted_p_values: a discovery's adjusted p is at most q)."""
    return [p <= q for p in adjusted_p_values(p_values, "fdr_bh")]
