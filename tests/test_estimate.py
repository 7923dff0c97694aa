"""The run's time estimate (preflight.estimate), phase by phase: with adaptive
repetitions only the saturated cases chase their CI, so capacity searches and paced
(service-demand) runs count at the minimum; the estimate is every case at the minimum,
the ceiling every adaptive case at its maximum (what --max-eta is checked against)."""

from __future__ import annotations

import pytest

from offlab.run import preflight
from offlab.run.plan import load


@pytest.fixture(scope="module")
def quick():
    plan = load("quick")
    return plan.cases, plan.settings()


def test_fixed_cases_count_at_the_minimum_and_adaptive_ones_up_to_the_maximum(quick):
    cases, settings = quick
    assert settings.ci_target is not None and settings.max_runs > settings.min_runs
    for case in cases:
        expected, most = preflight.repetitions(case, settings)
        fixed = case.traffic.mode == "capacity" or bool(case.traffic.service_demand)
        assert expected == settings.min_runs
        assert most == (settings.min_runs if fixed else settings.max_runs)


def test_the_estimate_is_the_sum_of_its_phases(quick):
    cases, settings = quick
    eta = preflight.estimate(cases, settings)
    topologies = {(c.scenario, c.mtu, c.topology) for c in cases}
    expected = sum(settings.min_runs * preflight.sample_seconds(c) for c in cases)
    expected += len(topologies) * preflight.BUILD_S + preflight.REPORT_S
    assert eta.seconds == pytest.approx(expected)
    assert eta.samples == settings.min_runs * len(cases)
    adaptive = [c for c in cases if preflight.repetitions(c, settings)[1] > settings.min_runs]
    extra = sum((settings.max_runs - settings.min_runs) * preflight.sample_seconds(c) for c in adaptive)
    assert eta.ceiling_s == pytest.approx(expected + extra)
    assert "at most" in eta.text


def test_max_eta_is_checked_against_the_ceiling(quick):
    cases, settings = quick
    eta = preflight.estimate(cases, settings)
    preflight.check_eta(eta, eta.ceiling_s + 1, confirmed=False)
    with pytest.raises(preflight.PreflightError, match="--max-eta"):
        preflight.check_eta(eta, (eta.seconds + eta.ceiling_s) / 2, confirmed=False)


def test_done_samples_are_not_counted_again(quick):
    cases, settings = quick
    done = {c.key: settings.max_runs for c in cases[1:]}
    eta = preflight.estimate(cases, settings, done)
    assert eta.topologies == 1 and eta.samples == settings.min_runs


def test_a_paced_sample_counts_its_request_response_probes_start_and_stop(quick):
    # Issue 40: the quick plan's paced samples began 1.9 s (median) after the previous
    # window plus warm-up, saturated ones 0.4 s; at 0.5 s for both the estimate was 16 %
    # short. The model's constant, not a timing, is what is checked here.
    cases, _ = quick
    paced = next(c for c in cases if c.traffic.service_demand)
    saturated = next(c for c in cases if not c.traffic.service_demand)
    traffic = lambda c: c.traffic.warmup_s + c.traffic.duration_s  # noqa: E731
    assert preflight.sample_seconds(paced) - traffic(paced) == pytest.approx(preflight.PACED_OVERHEAD_S)
    assert preflight.PACED_OVERHEAD_S >= 1.5
    assert preflight.sample_seconds(saturated) - traffic(saturated) == pytest.approx(preflight.SAMPLE_OVERHEAD_S)
