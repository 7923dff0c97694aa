"""Round-trip histograms: percentiles within the bins' resolution, only where enough round
trips carry them, and bootstrap intervals that hold the between-run spread."""

import random

import pytest

from offlab.measure import latency, rtthist


def test_percentiles_from_the_histogram_match_the_exact_ones_within_a_bin():
    rng = random.Random(1)
    values = sorted(rng.lognormvariate(4.5, 0.6) for _ in range(5000))
    hist = rtthist.histogram(values)
    assert sum(hist.values()) == 5000
    for q in (50.0, 99.0, 99.9):
        exact = latency.percentile(values, q)
        assert rtthist.percentile(hist, q) == pytest.approx(exact, rel=0.023)
    again = rtthist.from_counters({**rtthist.to_counters(hist, "rtt"), "rtt_p50_us": 3.0}, "rtt")
    assert again == hist


def test_a_tail_percentile_needs_its_round_trips():
    small = [rtthist.histogram([100.0] * 60), rtthist.histogram([110.0] * 60)]
    assert rtthist.estimate(small, 99.0).value is not None  # 120 ≥ 100
    p999 = rtthist.estimate(small, 99.9)
    assert p999.value is None and p999.n == 120
    assert rtthist.estimate([{}], 50.0).value is None


def test_the_bootstrap_interval_covers_the_estimate_and_widens_with_run_spread():
    rng = random.Random(2)
    alike = [rtthist.histogram(rng.gauss(100, 5) for _ in range(2000)) for _ in range(3)]
    apart = [rtthist.histogram(rng.gauss(mu, 5) for _ in range(2000)) for mu in (80, 100, 130)]
    tight, wide = rtthist.estimate(alike, 50.0), rtthist.estimate(apart, 50.0)
    assert tight.interval[0] <= tight.value <= tight.interval[1]
    assert wide.interval[1] - wide.interval[0] > 5 * (tight.interval[1] - tight.interval[0])
    assert rtthist.estimate(alike[:1], 50.0).interval is None  # one run: no between-run spread


def test_cdf_climbs_to_one():
    xs, ys = rtthist.cdf(rtthist.histogram([10.0, 20.0, 20.0, 40.0]))
    assert ys[-1] == 1.0 and xs == sorted(xs) and ys == sorted(ys)
