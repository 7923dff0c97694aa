"""The compare rule on synthetic runs whose builds differ: shared between-build shifts are
not called changes, a real change still is, and the false discovery rate is held."""

import random

import pytest

from offlab.analysis.compare_rule import (Change, between_build_variance, benjamini_hochberg, chance_bound,
                                          change, judge)
from offlab.analysis.stats import summary, welch


def _runs(rng, cases, build_sd, within_sd=0.01, n=3, changed=None):
    """Two runs (A, B) of `cases` cases: each run is one build, which shifts every case's
    mean by its own N(0, build_sd); `changed`: case index → real relative change in B."""
    a, b = [], []
    for k in range(cases):
        base = 10.0 * (1 + 0.1 * k)
        for run, out in ((0, a), (1, b)):
            shift = 1 + rng.gauss(0, build_sd) + (changed or {}).get(k, 0.0) * run
            out.append(summary([base * shift * (1 + rng.gauss(0, within_sd)) for _ in range(n)]))
    return a, b


def test_a_a_with_build_to_build_shifts_flags_what_chance_allows_and_welch_does_not():
    rng = random.Random(3)
    naive_total, rule_total, gate_fails, trials = 0, 0, 0, 20
    for _ in range(trials):
        a, b = _runs(rng, 22, build_sd=0.04)
        naive_total += sum(1 for x, y in zip(a, b) if welch(y.values, x.values).significant)
        (verdicts,) = judge([[change(x, y) for x, y in zip(a, b)]])
        rule_total += sum(v.flagged for v in verdicts)
        gate_fails += any(v.discovery for v in verdicts)
    assert gate_fails <= 3  # the gate's false alarms: about one comparison in twenty
    assert naive_total / trials > 5  # within-run spread alone: many cases "changed"
    assert rule_total / trials <= 0.05 * 22 * 1.5  # the rule: about 5 % of the tests
    assert rule_total / trials <= chance_bound(22)


def test_a_real_ten_percent_change_is_still_caught_and_its_detectable_size_said():
    rng = random.Random(4)
    a, b = _runs(rng, 22, build_sd=0.02, within_sd=0.005, changed={5: -0.10})
    (verdicts,) = judge([[change(x, y) for x, y in zip(a, b)]])
    assert verdicts[5].flagged and verdicts[5].change.ratio == pytest.approx(-0.10, abs=0.05)
    assert sum(v.flagged for v in verdicts) <= chance_bound(22) + 1
    assert all(0 < v.mde < 0.10 for v in verdicts)  # every case could show 10 %


def test_between_build_variance_is_zero_without_excess_and_ignores_a_few_outliers():
    quiet = [Change(r, 0.01 ** 2, 4.0) for r in (0.005, -0.01, 0.002, 0.012, -0.004, 0.0)]
    assert between_build_variance(quiet) == 0.0
    shifted = [Change(r, 0.001 ** 2, 4.0) for r in (0.05, -0.04, 0.03, -0.06, 0.045, -0.035, 0.5)]
    tau = between_build_variance(shifted) ** 0.5
    assert 0.03 < tau < 0.1  # the one real 50 % change does not set the scale
    assert between_build_variance(shifted[:2]) == 0.0  # too few cases to say


def test_benjamini_hochberg_and_missing_changes():
    assert benjamini_hochberg([0.001, 0.02, 0.04, 0.5], 0.05) == [True, True, False, False]  # 0.02 ≤ 0.05·2/4
    assert benjamini_hochberg([0.01, 0.02, 0.03, 0.04], 0.05) == [True, True, True, True]
    one = summary([1.0])
    assert change(one, summary([1.0, 1.1])) is None
    assert judge([[None, None]]) == [[None, None]]
