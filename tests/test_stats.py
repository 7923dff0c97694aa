"""Statistics against textbook values and scipy's own implementations."""

import math

import pytest
from scipy import stats as sps

from offlab.analysis import stats


def test_summary_matches_textbook_t_interval():
    # Student's t interval for 5 values: mean 10, s = √2.5, t(0.975, 4) = 2.776445
    values = [8.0, 9.0, 10.0, 11.0, 12.0]
    s = stats.summary(values)
    assert s.n == 5
    assert s.mean == 10.0
    assert s.std == pytest.approx(math.sqrt(2.5))
    assert s.ci95 == pytest.approx(2.776445 * math.sqrt(2.5) / math.sqrt(5), rel=1e-6)
    assert s.cv == pytest.approx(math.sqrt(2.5) / 10.0)
    assert s.median == 10.0
    assert s.mad == 1.0
    assert s.outliers == ()


def test_ci_agrees_with_scipy_interval():
    values = [3.1, 2.9, 3.4, 3.0, 3.3, 2.8, 3.2]
    s = stats.summary(values)
    low, high = sps.t.interval(0.95, len(values) - 1, loc=s.mean, scale=sps.sem(values))
    assert s.mean - s.ci95 == pytest.approx(low)
    assert s.mean + s.ci95 == pytest.approx(high)


def test_single_value_has_no_spread():
    s = stats.summary([42.0])
    assert (s.n, s.mean, s.median, s.mad) == (1, 42.0, 42.0, 0.0)
    assert s.std is None and s.ci95 is None and s.cv is None
    assert s.outliers == ()


def test_zero_variance():
    s = stats.summary([5.0, 5.0, 5.0, 5.0])
    assert s.std == 0.0 and s.ci95 == 0.0 and s.cv == 0.0
    assert s.outliers == ()


def test_zero_mean_has_no_cv():
    s = stats.summary([-1.0, 1.0])
    assert s.mean == 0.0 and s.cv is None


def test_empty_is_an_error():
    with pytest.raises(ValueError):
        stats.summary([])


def test_modified_z_flags_the_odd_run():
    values = [10.0, 10.2, 9.9, 10.1, 10.0, 14.0]
    assert stats.modified_z_outliers(values) == (5,)
    # Iglewicz–Hoaglin: M = 0.6745 (x − median) / MAD; median 10.05, MAD 0.1
    z = stats.modified_z_scores(values)
    assert z[5] == pytest.approx(0.6745 * (14.0 - 10.05) / 0.1)


def test_modified_z_falls_back_to_mean_ad_when_mad_is_zero():
    values = [7.0, 7.0, 7.0, 7.0, 9.0]
    # MAD = 0; MeanAD = 0.4 → M = (9 − 7) / (1.253314 · 0.4) ≈ 3.99 > 3.5
    assert stats.modified_z_scores(values)[4] == pytest.approx(2 / (1.253314 * 0.4))
    assert stats.modified_z_outliers(values) == (4,)


def test_two_values_never_have_an_outlier():
    assert stats.modified_z_outliers([1.0, 100.0]) == ()


def test_welch_matches_scipy():
    a = [20.1, 19.5, 20.8, 20.3, 19.9]
    b = [12.0, 12.9, 11.7, 12.4, 12.2, 12.8]
    w = stats.welch(a, b)
    ref = sps.ttest_ind(a, b, equal_var=False)
    assert w.p_value == pytest.approx(ref.pvalue, rel=1e-9)
    assert w.df == pytest.approx(ref.df, rel=1e-9)
    low, high = ref.confidence_interval(0.95)
    assert w.ci95[0] == pytest.approx(low) and w.ci95[1] == pytest.approx(high)
    assert w.diff == pytest.approx(sum(a) / 5 - sum(b) / 6)
    assert w.significant


def test_welch_not_significant_for_overlapping_samples():
    a = [10.0, 10.5, 9.5, 10.2]
    b = [10.1, 9.8, 10.4, 9.9]
    w = stats.welch(a, b)
    assert w.p_value > 0.05
    assert w.ci95[0] < 0 < w.ci95[1]
    assert not w.significant


def test_welch_with_a_single_run_cannot_decide():
    w = stats.welch([10.0], [5.0, 5.1])
    assert w.diff == pytest.approx(10.0 - 5.05)
    assert w.p_value is None and w.ci95 is None and not w.significant


def test_welch_zero_variance_both_sides():
    assert stats.welch([3.0, 3.0], [3.0, 3.0]).p_value == 1.0
    w = stats.welch([3.0, 3.0], [2.0, 2.0])
    assert w.p_value == 0.0 and w.ci95 == (1.0, 1.0) and w.significant


def test_relative_change_fieller_interval():
    new = [12.0, 12.4, 11.8, 12.2, 12.1]
    base = [20.0, 20.4, 19.7, 20.1, 19.9]
    r = stats.relative_change(new, base)
    a, b = sum(new) / 5, sum(base) / 5
    assert r.ratio == pytest.approx(12.1 / 20.02 - 1, abs=1e-12)
    # Both ends solve Fieller's equation (ā − ρ b̄)² = t² (v_a + ρ² v_b) at Welch's df.
    v_a, v_b = sps.tvar(new) / 5, sps.tvar(base) / 5
    t = sps.t.ppf(0.975, sps.ttest_ind(new, base, equal_var=False).df)
    for end in r.ci95:
        rho = end + 1
        assert (a - rho * b) ** 2 == pytest.approx(t * t * (v_a + rho * rho * v_b), rel=1e-9)
    assert r.ci95[0] < r.ratio < r.ci95[1] < 0 and r.significant
    assert r.half_width == pytest.approx(max(r.ratio - r.ci95[0], r.ci95[1] - r.ratio))


def test_relative_change_ci_agrees_with_welch():
    # Fieller's CI excludes 0 exactly when Welch's test rejects, even with noisy data.
    import random

    rng = random.Random(11)
    for _ in range(300):
        base = [rng.gauss(10.0, rng.uniform(0.1, 3.0)) for _ in range(rng.randint(2, 6))]
        new = [rng.gauss(rng.uniform(7, 13), rng.uniform(0.1, 3.0)) for _ in range(3)]
        r = stats.relative_change(new, base)
        if r.ci95 is None:
            continue
        excludes = r.ci95[0] > 0 or r.ci95[1] < 0
        assert excludes == (r.welch.p_value < 0.05)


def test_relative_change_unbounded_when_baseline_is_indistinguishable_from_zero():
    r = stats.relative_change([5.0, 5.2, 4.9], [0.1, -0.2, 0.3])
    assert r.ci95 is None and not r.significant


def test_relative_change_zero_variance():
    r = stats.relative_change([3.0, 3.0], [2.0, 2.0])
    assert r.ratio == 0.5 and r.ci95 == (0.5, 0.5) and r.significant


def test_relative_change_of_zero_baseline_is_undefined():
    assert stats.relative_change([1.0, 2.0], [0.0, 0.0]) is None


def test_relative_change_single_run_has_no_ci():
    r = stats.relative_change([2.0], [1.0, 1.1])
    assert r.ci95 is None and r.half_width is None and not r.significant


def test_relative_change_coverage_is_near_nominal():
    # Fieller's CI on the ratio should cover the true ratio ~95 % of the time for
    # well-measured baselines (CV 2 %); a deterministic generator keeps this stable.
    import random

    rng = random.Random(7)
    covered = 0
    trials = 400
    for _ in range(trials):
        base = [rng.gauss(100.0, 2.0) for _ in range(5)]
        new = [rng.gauss(60.0, 2.0) for _ in range(5)]
        low, high = stats.relative_change(new, base).ci95
        covered += low <= -0.4 <= high
    assert 0.90 <= covered / trials <= 0.99


def test_runs_needed():
    # s = 1, mean = 10, target ±5 % → t(0.975, n-1)/√n ≤ 0.5 first holds at n = 18
    n = stats.runs_needed(1.0, 10.0, 0.05)
    assert sps.t.ppf(0.975, n - 1) / math.sqrt(n) <= 0.5
    assert sps.t.ppf(0.975, n - 2) / math.sqrt(n - 1) > 0.5
    assert n == 18
    assert stats.runs_needed(0.0, 10.0, 0.05) == 2
    assert stats.runs_needed(100.0, 1.0, 0.001, max_runs=50) == 50
    with pytest.raises(ValueError):
        stats.runs_needed(1.0, 1.0, 0.0)


def test_scaled_summary_changes_units():
    s = stats.summary([1e9, 2e9, 3e9]).scaled(1e-9)
    assert s.mean == pytest.approx(2.0) and s.std == pytest.approx(1.0)


def test_interval_never_reaches_below_a_physical_zero():
    from offlab.analysis.stats import summary

    noisy = summary([0.016, 0.9, 0.02])  # a t-interval of this reaches far below 0
    assert noisy.mean - noisy.ci95 < 0
    low, high = noisy.interval
    assert 0 < low < high and high > noisy.median
    steady = summary([10.0, 10.2, 9.9])
    assert steady.interval == (steady.mean - steady.ci95, steady.mean + steady.ci95)
    assert summary([5.0]).interval is None


def test_outliers_need_five_values():
    from offlab.analysis.stats import modified_z_outliers

    assert modified_z_outliers([1.0, 1.0, 1.01, 9.0]) == ()
    assert modified_z_outliers([1.0, 1.0, 1.01, 0.99, 9.0]) == (4,)


def test_the_family_adjustment_gives_statsmodels_values_holm_and_bh():
    import gc
    import random

    from statsmodels.stats.multitest import multipletests

    from offlab.analysis.stats import adjusted_p_values

    rng = random.Random(20261129)
    # statsmodels' Holm runs a full gc.collect() on every call: 110 ms each over the
    # test process's heap, 39 s of CPU for this test. Objects alive now are frozen out
    # of the collector's reach for its duration (the values compared are the same).
    gc.freeze()
    try:
        for family in range(500):
            m = rng.randint(1, 40)
            pool = [rng.choice((0.0, 1.0, 0.05)) if rng.random() < 0.05 else rng.random() ** 3 for _ in range(m)]
            # ties (drawn from a few values) in a third of the families
            p_values = [rng.choice(pool[:3]) for _ in range(m)] if family % 3 == 0 else pool
            for method in ("holm", "fdr_bh"):
                expected = multipletests(p_values, alpha=0.05, method=method)[1]
                assert adjusted_p_values(p_values, method) == pytest.approx(tuple(expected), abs=1e-12), \
                    (method, p_values)
    finally:
        gc.unfreeze()


def test_the_report_adjusts_a_family_holm_and_bh():
    from offlab.analysis.stats import adjusted_p_values

    # Holm: the smallest p times the family size, then step-down, kept monotone.
    assert adjusted_p_values([0.01, 0.04, 0.03]) == pytest.approx((0.03, 0.06, 0.06))
    assert adjusted_p_values([0.04] + [0.5] * 21)[0] == pytest.approx(0.88)
    assert adjusted_p_values([0.001, 0.04, 0.03], "fdr_bh") == pytest.approx((0.003, 0.04, 0.04))
    assert adjusted_p_values([]) == ()
    with pytest.raises(ValueError):
        adjusted_p_values([0.1], "bonferroni-by-hand")


def test_an_effect_is_written_with_both_ends_of_its_ci_never_a_half_width():
    """One meaning of "±" in the report: a standard deviation. The old phrasing used
    "± half-width" for near-symmetric CIs, beside tables whose "±" was a std."""
    from offlab.report.phrases import format_change
    from offlab.analysis.stats import relative_change

    text = format_change(relative_change([20.0, 20.2, 19.8], [12.0, 12.1, 11.9]))
    assert "±" not in text and text.startswith("+67% [CI +") and text.endswith("%]")


def test_a_relative_change_of_positive_data_never_reaches_below_minus_100_percent():
    from offlab.analysis.stats import relative_change

    change = relative_change([0.1, 3.0, 0.2, 2.5], [4.0, 4.1, 3.9, 4.05])
    assert change.ci95 is not None and change.ci95[0] == -1.0 and change.ratio > -1.0


@pytest.mark.parametrize("df", [1, 2, 4.5, 9, 29, 117.3, 1e4])
def test_t_functions_are_scipy_stats_own(df):
    # stats.py takes the Student-t functions from scipy.special (a third of scipy.stats'
    # import): the quantile and the two-sided p-value must be scipy.stats.t's, bit for bit
    stats.t_quantile.cache_clear()
    assert stats.t_quantile(df) == float(sps.t.ppf(0.975, df))
    for t_stat in (0.3, 1.96, 2.5, 7.0):
        assert stats.two_sided_p(t_stat, df) == float(2.0 * sps.t.sf(t_stat, df))
        assert stats.two_sided_p(-t_stat, df) == float(2.0 * sps.t.sf(t_stat, df))


def test_a_history_imports_no_scipy_stats():
    # importing scipy.stats is ~1.1 s of a history's or a comparison's ~2 s
    import subprocess
    import sys
    code = ("import sys; from offlab.analysis import stats; stats.welch([1.0, 2.0, 3.0], [2.0, 3.0, 5.0]); "
            "stats.summary([1.0, 2.0]); print('scipy.stats' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
