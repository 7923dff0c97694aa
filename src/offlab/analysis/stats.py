"""Statistics over repeated measurements. Pure functions, no I/O.

Methods (all standard, cited so a reader can check them):

- Confidence interval of a mean: Student's t, two-sided 95 %, ``t(0.975, n-1) · s/√n``.
- Spread: sample standard deviation with Bessel's correction (n − 1); coefficient of
  variation = s / |mean|.
- Outliers: modified Z-score of Iglewicz & Hoaglin (1993), ``M = 0.6745 (x − median) / MAD``,
  flagged when ``|M| > 3.5`` and only from five values on (with fewer, the median and
  MAD are too rough to call one of them odd). When MAD is 0 (more than half the values equal) the
  score falls back to the mean absolute deviation, ``M = (x − median) / (1.253314 · MeanAD)``
  (the convention used by IBM SPSS and others); when that is 0 too there are no outliers.
- Difference of two means: Welch's unequal-variance t-test with Welch–Satterthwaite
  degrees of freedom (same p-value as ``scipy.stats.ttest_ind(equal_var=False)``).
- Intervals that respect a physical zero: throughput, CPU % and latencies cannot be
  negative, but a t-interval of a noisy mean can reach below 0. Where it does, and the
  values are all positive, the interval is the t-interval of the log values,
  back-transformed (Limpert, Stahel & Abbt 2001: a CI of the geometric mean, which is
  asymmetric and positive); ``Summary.interval``.
- Relative change with a CI: Fieller's theorem at Welch's degrees of freedom (see
  ``relative_change``), so it agrees with Welch's test by construction.
- Runs needed for a target CI half-width: smallest n with ``t(0.975, n-1) · s/√n ≤ target``.
- Many tests at once: Holm's step-down adjustment (Holm 1979), which holds the chance
  that any of the family's rejections is false at 5 % whatever the tests' dependence, or
  Benjamini–Hochberg's false discovery rate (1995) (``adjusted_p_values``: the values
  statsmodels' ``multipletests`` gives, which the tests check it against).

Quantities that cannot be estimated (the spread of a single run, a CI from one sample)
are ``None``, never ``nan``, so callers must decide how to show them.
"""

from __future__ import annotations

import functools
import math
import statistics
from dataclasses import dataclass
from typing import Sequence


CONFIDENCE = 0.95
MODIFIED_Z_THRESHOLD = 3.5
MIN_OUTLIER_N = 5
_MAD_TO_Z = 0.6745  # Φ⁻¹(0.75): makes MAD comparable to σ for normal data
_MEANAD_TO_Z = 1.253314  # √(π/2): makes the mean absolute deviation comparable to σ


@dataclass(frozen=True)
class Summary:
    """Descriptive statistics of one case's repetitions, with the raw values kept."""

    values: tuple[float, ...]
    n: int
    mean: float
    std: float | None
    """Sample standard deviation (n − 1); None with a single value."""
    ci95: float | None
    """Half-width of the 95 % Student-t confidence interval of the mean."""
    cv: float | None
    """Coefficient of variation s/|mean| as a fraction; None if n < 2 or mean is 0."""
    median: float
    mad: float
    """Median absolute deviation (raw, not scaled to σ)."""
    outliers: tuple[int, ...]
    """Indices into ``values`` whose modified Z-score exceeds 3.5 (n ≥ 5 only)."""
    interval: tuple[float, float] | None = None
    """95 % CI of the location, never below a physical zero for positive data (see the
    module text); None with a single value."""

    @property
    def minimum(self) -> float:
        return min(self.values)

    @property
    def maximum(self) -> float:
        return max(self.values)

    def scaled(self, factor: float) -> "Summary":
        """The same summary with every value multiplied by ``factor`` (unit change)."""
        return summary([v * factor for v in self.values])

    @property
    def moments(self) -> "Moments":
        return Moments(self.n, self.mean, self.std, all(v > 0 for v in self.values))


@dataclass(frozen=True)
class Moments:
    """What a test of two means needs of each side: n, the mean, the sample standard
    deviation (None with one value) and whether every value was positive (a ratio of
    positive quantities is never below −100 %). A Summary has them; so does a database's
    aggregate over a case's samples (store.py), which need not send the values."""

    n: int
    mean: float
    std: float | None
    positive: bool

    @property
    def ci95(self) -> float | None:
        """Half-width of the 95 % Student-t interval of the mean (as Summary.ci95)."""
        return t_quantile(self.n - 1) * self.std / math.sqrt(self.n) if self.std is not None else None

    @property
    def interval(self) -> tuple[float, float] | None:
        """Summary.interval where it needs no values: the t-interval, when it stays at or
        above 0 or the values were not all positive; None where the positive interval
        (of the logs) is needed, which only the values give (`needs_values`)."""
        half = self.ci95
        if half is None or self.needs_values:
            return None
        return (self.mean - half, self.mean + half)

    @property
    def needs_values(self) -> bool:
        """Whether Summary.interval is the back-transformed interval of the logs."""
        half = self.ci95
        return half is not None and self.mean - half < 0 and self.positive


def _student_t():
    """scipy's Student-t functions (distribution function, its inverse), imported on first
    use: most commands (list, export, every refused command) never reach a t quantile.
    They come from scipy.special, which `scipy.stats.t` calls for these two (its `sf(x,
    df)` is `stdtr(df, -x)`, its `ppf(q, df)` is `stdtrit(df, q)`: the same figures,
    tests/test_stats.py checks it): importing scipy.stats costs ~1.1 s on the lab's
    2-core machine, scipy.special ~0.4 s, and `history` and `compare` need nothing else."""
    from scipy.special import stdtr, stdtrit

    return stdtr, stdtrit


@functools.lru_cache(maxsize=1024)
def t_quantile(df: float, confidence: float = CONFIDENCE) -> float:
    """Two-sided Student-t critical value. Cached: a history of 100 runs asks for the
    same few degrees of freedom a thousand times, and each scipy call costs ~1 ms."""
    return float(_student_t()[1](df, 0.5 + confidence / 2.0))


def two_sided_p(t_stat: float, df: float) -> float:
    """P(|T| ≥ |t_stat|) for Student's t with `df` degrees of freedom."""
    return float(2.0 * _student_t()[0](df, -abs(t_stat)))


def summary(values: Sequence[float]) -> Summary:
    """Summarise repetitions. Raises ``ValueError`` on an empty sequence."""
    vals = tuple(float(v) for v in values)
    if not vals:
        raise ValueError("summary of no values")
    n = len(vals)
    mean = statistics.fmean(vals)
    median = statistics.median(vals)
    mad = statistics.median(abs(v - median) for v in vals)
    std = statistics.stdev(vals, xbar=mean) if n > 1 else None
    moments = Moments(n, mean, std, all(v > 0 for v in vals))
    ci95 = moments.ci95
    cv = std / abs(mean) if std is not None and mean != 0 else None
    return Summary(
        values=vals,
        n=n,
        mean=mean,
        std=std,
        ci95=ci95,
        cv=cv,
        median=median,
        mad=mad,
        outliers=modified_z_outliers(vals),
        interval=positive_interval(vals, moments),
    )


def positive_interval(values: Sequence[float], moments: Moments) -> tuple[float, float] | None:
    """The t-interval (Moments.interval) while it stays at or above 0; for positive data
    whose t-interval crosses 0 (Moments.needs_values), the back-transformed t-interval
    of the logs."""
    if not moments.needs_values:
        return moments.interval
    logs = [math.log(v) for v in values]
    log_mean = statistics.fmean(logs)
    half = t_quantile(len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
    return (math.exp(log_mean - half), math.exp(log_mean + half))


def modified_z_scores(values: Sequence[float]) -> tuple[float, ...]:
    """Iglewicz–Hoaglin modified Z-scores (MeanAD fallback when MAD is 0)."""
    vals = [float(v) for v in values]
    if not vals:
        return ()
    median = statistics.median(vals)
    deviations = [abs(v - median) for v in vals]
    mad = statistics.median(deviations)
    if mad > 0:
        scale = mad / _MAD_TO_Z
    else:
        mean_ad = statistics.fmean(deviations)
        if mean_ad == 0:
            return tuple(0.0 for _ in vals)
        scale = _MEANAD_TO_Z * mean_ad
    return tuple((v - median) / scale for v in vals)


def modified_z_outliers(
    values: Sequence[float], threshold: float = MODIFIED_Z_THRESHOLD
) -> tuple[int, ...]:
    """Indices of values whose |modified Z| exceeds ``threshold``. Needs n ≥ 5: with
    fewer, the median and the MAD are too rough to call one value odd."""
    if len(values) < MIN_OUTLIER_N:
        return ()
    scores = modified_z_scores(values)
    return tuple(i for i, z in enumerate(scores) if abs(z) > threshold)


@dataclass(frozen=True)
class Welch:
    """Welch's t-test of mean(a) − mean(b)."""

    diff: float
    """mean(a) − mean(b)."""
    ci95: tuple[float, float] | None
    """95 % CI of the difference; None if either side has fewer than 2 values."""
    p_value: float | None
    df: float | None
    n_a: int
    n_b: int

    @property
    def significant(self) -> bool:
        """p < 0.05 and the CI excludes 0 (the two agree for Welch; both are checked so
        a degenerate case can never pass on one alone)."""
        if self.p_value is None or self.ci95 is None:
            return False
        low, high = self.ci95
        return self.p_value < 1.0 - CONFIDENCE and (low > 0 or high < 0)


def _welch_df(u_a: float, n_a: int, u_b: float, n_b: int) -> float:
    """Welch–Satterthwaite degrees of freedom for variance-of-mean terms u = s²/n."""
    denom = u_a**2 / (n_a - 1) + u_b**2 / (n_b - 1)
    return (u_a + u_b) ** 2 / denom


def welch(a: Sequence[float], b: Sequence[float]) -> Welch:
    """Welch's unequal-variance t-test and the CI of the difference of means.

    When both samples have zero variance the difference is known exactly: p is 1
    if the means are equal and 0 otherwise, and the CI collapses to the difference.
    """
    return welch_of(summary(a).moments, summary(b).moments)


def welch_of(sa: Moments, sb: Moments) -> Welch:
    """Welch's test from each side's moments (``welch`` of their values)."""
    diff = sa.mean - sb.mean
    if sa.std is None or sb.std is None:
        return Welch(diff, None, None, None, sa.n, sb.n)
    u_a, u_b = sa.std**2 / sa.n, sb.std**2 / sb.n
    se = math.sqrt(u_a + u_b)
    if se == 0:
        p = 1.0 if diff == 0 else 0.0
        return Welch(diff, (diff, diff), p, math.inf, sa.n, sb.n)
    df = _welch_df(u_a, sa.n, u_b, sb.n)
    t_stat = diff / se
    p = two_sided_p(t_stat, df)
    half = t_quantile(df) * se
    return Welch(diff, (diff - half, diff + half), p, df, sa.n, sb.n)


@dataclass(frozen=True)
class RelativeChange:
    """(mean(new) − mean(base)) / mean(base) with its 95 % CI, as fractions."""

    ratio: float
    ci95: tuple[float, float] | None
    """Fieller interval; None with a single run, or when the baseline mean cannot be
    told apart from 0 (the interval is then unbounded)."""
    welch: Welch

    @property
    def half_width(self) -> float | None:
        """The larger distance from the estimate to a CI end: a conservative "± x %" for
        the (slightly asymmetric) Fieller interval."""
        if self.ci95 is None:
            return None
        low, high = self.ci95
        return max(self.ratio - low, high - self.ratio)

    @property
    def significant(self) -> bool:
        """Welch p < 0.05 and the CI excludes 0 (by construction these agree, see
        ``relative_change``)."""
        if not self.welch.significant or self.ci95 is None:
            return False
        return self.ci95[0] > 0 or self.ci95[1] < 0


def relative_change(new: Sequence[float], base: Sequence[float]) -> RelativeChange | None:
    """Relative change of ``new`` over ``base`` with a 95 % CI by Fieller's theorem.

    The CI of ρ = μ_new / μ_base is the set of ρ with
    (ā − ρ·b̄)² ≤ t² (v_a + ρ² v_b), v = s²/n, t at the Welch–Satterthwaite degrees of
    freedom of the difference. At ρ = 1 that is exactly Welch's test, so the CI of the
    relative change excludes 0 if and only if Welch's test rejects at 5 % — the two can
    never disagree (the delta method's symmetric interval can, with noisy baselines).
    The interval is bounded only when the baseline mean is itself clearly non-zero
    (t² v_b < b̄²); otherwise the CI is None. Returns None when the baseline mean is 0.
    For positive data the lower end is held at −100 % (a ratio of rates or CPU figures
    cannot be negative; a noisy numerator lets Fieller's root reach below it, and
    `compare` printed "−71 % [CI −146 %, …]").
    """
    return relative_change_of(summary(new).moments, summary(base).moments)


def relative_change_of(s_new: Moments, s_base: Moments) -> RelativeChange | None:
    """``relative_change`` from each side's moments."""
    if s_base.mean == 0:
        return None
    test = welch_of(s_new, s_base)
    ratio = s_new.mean / s_base.mean - 1.0
    if s_new.std is None or s_base.std is None or test.df is None:
        return RelativeChange(ratio, None, test)
    v_a, v_b = s_new.std**2 / s_new.n, s_base.std**2 / s_base.n
    if v_a == 0 and v_b == 0:
        return RelativeChange(ratio, (ratio, ratio), test)
    a, b, t2 = s_new.mean, s_base.mean, t_quantile(test.df) ** 2
    denom = b * b - t2 * v_b
    if denom <= 0:
        return RelativeChange(ratio, None, test)
    root = math.sqrt(t2 * (v_a * denom + v_b * a * a))
    low, high = sorted(((a * b - root) / denom, (a * b + root) / denom))
    if s_new.positive and s_base.positive:
        low = max(low, 0.0)  # a ratio of positive quantities is never below 0 (−100 %)
    return RelativeChange(ratio, (low - 1.0, high - 1.0), test)


FAMILY_METHOD = "holm"
"""The report's correction over all its tests: Holm (family-wise error at 5 %)."""
METHOD_NAMES = {"holm": "Holm", "fdr_bh": "Benjamini–Hochberg"}


def adjusted_p_values(p_values: Sequence[float], method: str = FAMILY_METHOD) -> tuple[float, ...]:
    """The p-values adjusted for being one family of tests, "holm" or "fdr_bh"; a test
    holds at 5 % when its adjusted p is below 0.05. An empty family gives an empty tuple.

    The same values as statsmodels' ``multipletests`` (tests/test_stats.py compares them
    on 500 random families of 1–40 tests, ties included), computed here: importing statsmodels
    pulls in scipy.stats and pandas, 1.2–1.3 s of CPU, the largest single part of writing
    a report, for two loops over a sorted list."""
    if method not in METHOD_NAMES:
        raise ValueError(f"unknown multiple-testing method {method!r}")
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    if method == "holm":
        # step-down: the k-th smallest p (from 0) times the m − k hypotheses left, never
        # below the one before it
        running = 0.0
        for k, i in enumerate(order):
            running = max(running, min(1.0, (m - k) * float(p_values[i])))
            adjusted[i] = running
    else:
        # step-up: the k-th smallest p times m / (k + 1), never above the one after it
        running = 1.0
        for k in range(m - 1, -1, -1):
            running = min(running, m / (k + 1) * float(p_values[order[k]]))
            adjusted[order[k]] = running
    return tuple(adjusted)


def runs_needed(
    std: float, mean: float, target_relative_half_width: float, max_runs: int = 1000
) -> int:
    """Smallest n (≥ 2) whose 95 % CI half-width is within ``target`` × |mean|,
    assuming the spread stays ``std``. Capped at ``max_runs``."""
    if target_relative_half_width <= 0:
        raise ValueError("target half-width must be positive")
    target = target_relative_half_width * abs(mean)
    if std == 0:
        return 2
    if target == 0:
        return max_runs
    for n in range(2, max_runs + 1):
        if t_quantile(n - 1) * std / math.sqrt(n) <= target:
            return n
    return max_runs
