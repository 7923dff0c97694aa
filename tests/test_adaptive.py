"""Adaptive repetitions: the stopping rule, its outcome, the CLI's parsing of the target,
and the outcome stored with the run and read back for the report."""

import pytest

from offlab.analysis.adaptive import Adaptive, AdaptiveOutcome, TargetError, parse_target, relative_half_width
from offlab.report.adaptive import adaptive_sections
from offlab.run.runner import pending
from offlab.store.store import Store
from tests.fixtures.make_store import RUN_ID, build_store

STEADY = [10.0, 10.1, 9.9, 10.0]
NOISY = [10.0, 14.0, 6.0, 12.0, 8.0]


@pytest.mark.parametrize("text, value", [("5%", 0.05), ("5", 0.05), (" 2.5 % ", 0.025)])
def test_parse_target(text, value):
    assert parse_target(text) == pytest.approx(value)


@pytest.mark.parametrize("text", ["0%", "100%", "five", "-3%", ""])
def test_bad_targets_say_how_to_fix(text):
    with pytest.raises(TargetError, match="--ci-target"):
        parse_target(text)


def test_rule_validation():
    with pytest.raises(TargetError, match="--min-runs 1"):
        Adaptive(0.05, 1, 10)
    with pytest.raises(TargetError, match="below --min-runs"):
        Adaptive(0.05, 5, 4)


def test_never_stops_before_min_runs_even_when_tight():
    rule = Adaptive(0.05, 3, 10)
    assert rule.wants_more([10.0, 10.0])
    assert not rule.wants_more([10.0, 10.0, 10.0])


def test_stops_when_the_ci_is_within_target():
    rule = Adaptive(0.05, 3, 10)
    assert relative_half_width(STEADY) < 0.05
    assert not rule.wants_more(STEADY)
    outcome = rule.outcome("k", STEADY)
    assert outcome.reached and outcome.runs == 4
    assert outcome.sentence().startswith("target 5% reached after 4 runs (CI ±")


def test_noisy_case_runs_to_the_ceiling_and_says_it_missed():
    rule = Adaptive(0.05, 3, 5)
    assert rule.wants_more(NOISY[:4])
    assert not rule.wants_more(NOISY)  # ceiling
    outcome = rule.outcome("k", NOISY)
    assert not outcome.reached
    width = 100 * relative_half_width(NOISY)
    assert outcome.sentence() == f"target 5% not reached after 5 runs (CI ±{width:.1f}%)"


def test_zero_mean_never_reaches_a_target():
    rule = Adaptive(0.05, 2, 4)
    outcome = rule.outcome("k", [0.0, 0.0])
    assert not outcome.reached and outcome.half_width is None
    assert "CI undefined" in outcome.sentence()


def test_adaptive_work_list_uses_the_ceiling():
    # Resume bookkeeping: with a ceiling of 10, a case with 4 stored runs is still pending.
    from offlab.run import plan
    cases = plan.load("quick").cases[:2]
    assert [first for _, first in pending(cases, 10, {cases[0].key: 4})] == [4, 0]


def test_outcome_is_stored_replaced_on_resume_and_loaded(tmp_path):
    path = tmp_path / "s.sqlite"
    build_store(path)
    with Store(path) as store:
        key = store.load_run(RUN_ID).cases[0].key
        store.record_adaptive(RUN_ID, AdaptiveOutcome(key, 0.05, 3, 10, 10, 0.072, False))
        store.record_adaptive(RUN_ID, AdaptiveOutcome(key, 0.05, 3, 12, 12, 0.049, True))
    with Store(path) as store:
        loaded = store.load_run(RUN_ID).adaptive
    assert loaded == {key: AdaptiveOutcome(key, 0.05, 3, 12, 12, 0.049, True)}


def test_report_section_lists_misses_first():
    outcomes = {
        "a": AdaptiveOutcome("a", 0.05, 3, 10, 4, 0.03, True),
        "b": AdaptiveOutcome("b", 0.05, 3, 10, 10, 0.072, False),
    }
    ((title, _, ((caption, table),)),) = adaptive_sections(outcomes)
    assert title == "Adaptive repetitions (target ±5%)"
    assert caption.startswith("1 of 2 cases reached ±5% within 3–10 runs")
    assert table.rows[0][0] == "b"
    assert table.rows[0][2] == "target 5% not reached after 10 runs (CI ±7.2%)"
    assert table.rows[0][3:] == ("10", "±7.2%")
    assert adaptive_sections({}) == []
