"""The UDP capacity search on synthetic loss curves: it finds the knee within its
resolution, stops, stores every probe, and says when the sender was the limit."""

import pytest

from offlab.measure.ratesearch import (UNLIMITED, Probe, SearchError, SearchRule, ceiling, limiting_probe,
                                       monotone, overloaded, passed, search, verify)


def receiver(knee_bps: float, sender_max_bps: float = 10e9):
    """A receiver that keeps up to `knee_bps` and drops everything above it."""
    asked: list[float] = []

    def trial(rate: float) -> Probe:
        asked.append(rate)
        sent = sender_max_bps if rate == UNLIMITED else min(rate, sender_max_bps)
        received = min(sent, knee_bps)
        return Probe(rate, sent, received, 100.0 * (sent - received) / sent)

    return trial, asked


@pytest.mark.parametrize("knee", [3.7e9, 250e6, 9.9e9, 12e6])
def test_finds_the_knee_within_its_resolution(knee):
    trial, asked = receiver(knee)
    rule = SearchRule(loss_percent=0.1, resolution=0.05, max_probes=30)
    found = search(trial, rule)
    low, high = found.bracket
    assert found.resolved and low <= knee * 1.001 <= high * 1.001
    assert high / low <= 1.05
    assert found.rate_bps <= knee and found.rate_bps >= knee / 1.05 / 1.001
    assert [p.offered_bps for p in found.probes] == asked and asked[0] == UNLIMITED
    assert not found.sender_bound


def test_stops_at_the_probe_budget_and_says_so():
    trial, asked = receiver(1.3e9)
    found = search(trial, SearchRule(resolution=0.001, max_probes=5))
    assert len(asked) == 5 and not found.resolved
    assert found.bracket[0] <= 1.3e9 < found.bracket[1]


def test_a_sender_bound_case_is_its_senders_rate():
    trial, asked = receiver(knee_bps=50e9, sender_max_bps=4e9)
    found = search(trial)
    assert found.sender_bound and found.rate_bps == 4e9 and asked == [UNLIMITED]


def test_nothing_passes_above_the_floor():
    trial, _ = receiver(knee_bps=10.0)
    found = search(trial, SearchRule(floor_bps=1e6, max_probes=40))
    assert found.rate_bps == 0.0 and found.bracket[0] == 0.0


def test_loss_threshold_is_inclusive_and_overload_is_above_it():
    assert passed(Probe(1, 1, 1, 0.1), 0.1) and not passed(Probe(1, 1, 1, 0.11), 0.1)
    assert overloaded(99.4) and not overloaded(0.05) and not overloaded(None)


@pytest.mark.parametrize("kwargs", [{"loss_percent": -1}, {"resolution": 0}, {"max_probes": 1}])
def test_bad_rules_are_refused(kwargs):
    with pytest.raises(SearchError):
        SearchRule(**kwargs)


def test_the_second_probe_offers_what_the_receiver_took_first():
    trial, asked = receiver(2e9)
    found = search(trial, SearchRule(resolution=0.05, max_probes=12))
    assert asked[1] == 2e9 and found.rate_bps == 2e9  # a receiver that kept its pace
    livelock, asked = receiver(2e9)

    def collapsing(rate):  # under overload it takes far less than it can
        probe = livelock(rate)
        return probe if rate else Probe(0.0, probe.sent_bps, 0.1e9, 98.0)

    found = search(collapsing, SearchRule(resolution=0.05, max_probes=12))
    assert asked[1] == 0.1e9 and found.bracket[0] <= 2e9 <= found.bracket[1] * 1.001


def test_the_capacity_is_the_most_a_passing_probe_delivered():
    # The unlimited probe collapses (2 Gbit/s taken), the second offers that and passes;
    # above 4 Gbit/s the sender falls short of its offer (a busy core) and passes with
    # 1.9 received. The bracket still climbs by offered rate; the capacity does not fall.
    trial, asked = receiver(knee_bps=5e9)

    def short_sender(rate):
        if rate == UNLIMITED:
            return Probe(rate, 10e9, 2e9, 80.0)
        if 4e9 < rate <= 5e9:
            return Probe(rate, 1.9e9, 1.9e9, 0.0)
        return trial(rate)

    found = search(short_sender, SearchRule(resolution=0.05, max_probes=12))
    passing = [p for p in found.probes if passed(p, 0.1)]
    assert any(p.received_bps == 1.9e9 for p in passing), "a short sender passed"
    assert found.rate_bps == max(p.received_bps for p in passing) == 2e9
    assert found.offered_bps == 2e9


def test_verification_offers_the_found_rate_and_steps_down_when_it_fails():
    trial, asked = receiver(3e9)
    rule = SearchRule(resolution=0.05, max_probes=30)
    found = search(trial, rule)
    checked = verify(trial, found, rule)
    assert checked.passed and checked.steps_down == 0 and asked[-1] == found.offered_bps
    assert checked.trial.received_bps == found.offered_bps
    # A receiver that kept up in the short probes but not for a full trial: one step down.
    full_length, asked = receiver(found.offered_bps / 1.03)
    checked = verify(full_length, found, rule)
    assert checked.passed and checked.steps_down == 1
    assert asked == [found.offered_bps, pytest.approx(found.offered_bps / 1.05)]
    never, _ = receiver(1e6)
    failed = verify(never, found, rule, max_trials=3)
    assert not failed.passed and len(failed.tried) == 3 and failed.trial is failed.tried[-1]


def test_verification_steps_down_by_the_resolution_steps_it_is_given():
    trial, _ = receiver(3e9)
    rule = SearchRule(resolution=0.05, max_probes=30)
    found = search(trial, rule)
    # Kept up in the short probes, not for a full trial until ~8 % lower: one step of two
    # resolution steps (the lab's capacity.py) passes where one resolution step would not.
    full_length, asked = receiver(found.offered_bps / 1.08)
    checked = verify(full_length, found, rule, max_trials=3, step_resolutions=2)
    assert checked.passed and checked.steps_down == 1
    assert asked == [found.offered_bps, pytest.approx(found.offered_bps / 1.05 ** 2)]


def test_a_sender_bound_search_is_verified_paced_at_what_it_sent_and_its_limit_is_none():
    trial, asked = receiver(knee_bps=50e9, sender_max_bps=4e9)
    found = search(trial)
    assert verify(trial, found).passed and asked == [UNLIMITED, 4e9]
    assert limiting_probe(found) is None
    bounded, _ = receiver(2e9)
    found = search(bounded, SearchRule(resolution=0.05, max_probes=12))
    limit = limiting_probe(found, SearchRule(resolution=0.05))
    assert limit is not None and limit.loss_percent > 0.1 and limit.offered_bps >= found.offered_bps


def test_a_sender_bound_verification_never_offers_more_than_the_highest_passing_probe():
    """Issue 37: the unlimited probe passed at 2.90 Gbit/s; offered unlimited again, the
    sender ran at 4.03 and lost 6 %, and stepping down from what it sent "verified" 3.31 —
    above anything the search passed. Every trial must be paced at or below 2.90."""
    offers: list[float] = []
    runs = iter([2.9e9, 4.03e9, 4.03e9, 4.03e9])  # the sender's speed per unlimited run

    def trial(rate: float) -> Probe:
        offers.append(rate)
        sent = next(runs) if rate == UNLIMITED else min(rate, 4.03e9)
        received = min(sent, 3.8e9)
        return Probe(rate, sent, received, 100.0 * (sent - received) / sent)

    rule = SearchRule(resolution=0.05)
    found = search(trial, rule)
    assert found.sender_bound and ceiling(found, rule) == 2.9e9
    checked = verify(trial, found, rule, max_trials=3, step_resolutions=2)
    assert checked.passed and offers[1:] == [2.9e9]
    assert all(0 < p.offered_bps <= ceiling(found, rule) for p in checked.tried)
    assert checked.trial.received_bps <= 2.9e9


def test_loss_that_falls_as_the_rate_rises_is_not_monotone():
    """0 % at 0.80, 62 % at 0.975, 16 % at 0.884 Gbit/s — and the reverse order."""
    rule = SearchRule()
    knee = (Probe(0.0, 3e9, 0.8e9, 70.0), Probe(0.8e9, 0.8e9, 0.8e9, 0.0), Probe(0.884e9, 0.884e9, 0.88e9, 0.05))
    assert monotone(knee, rule)
    assert not monotone(knee + (Probe(0.86e9, 0.86e9, 0.7e9, 16.0),), rule)


def test_a_search_where_nothing_passed_is_verified_by_halving_on():
    plain, asked = receiver(0.2e9)

    def trial(rate):  # a flood takes 4 Gbit/s off the wire but keeps only 0.2
        probe = plain(rate)
        return probe if rate else Probe(0.0, probe.sent_bps, 4e9, 60.0)

    found = search(trial, SearchRule(resolution=0.05, max_probes=4))  # unlimited, guess, two steps down
    assert found.rate_bps == 0.0 and found.bracket[1] == pytest.approx(4e9 / 1.05 / 1.05 ** 2)
    checked = verify(trial, found, SearchRule(resolution=0.05), max_trials=5)
    assert asked[len(found.probes)] == pytest.approx(found.bracket[1] / 2)
    assert checked.passed and checked.trial.received_bps <= 0.2e9


def test_below_a_failing_guess_the_search_gallops_down_before_it_bisects():
    trial, asked = receiver(1e9)

    def collapsing(rate):
        probe = trial(rate)
        return probe if rate else Probe(0.0, probe.sent_bps, 4e9, 60.0)  # took 4, keeps 1

    found = search(collapsing, SearchRule(resolution=0.05, max_probes=12))
    # One resolution step, then steps doubling in log space, never more than halving.
    assert asked[1] == 4e9 and asked[2] == pytest.approx(4e9 / 1.05)
    assert [asked[i] / asked[i + 1] for i in range(2, 5)] == pytest.approx([1.05 ** 2, 1.05 ** 4, 1.05 ** 8])
    assert asked[5] / asked[6] == pytest.approx(2.0)
    assert found.resolved and 1e9 / 1.05 <= found.rate_bps <= 1e9


def test_a_guess_that_fails_by_a_hair_costs_one_resolution_step():
    """The flood took a little more than the receiver keeps up with: the guess fails
    narrowly, and the search must land within one step of the knee (halving here left
    a bracket the probe budget could not narrow: runs of one case 20 % apart)."""
    trial, asked = receiver(2.25e9)

    def near_miss(rate):
        probe = trial(rate)
        return probe if rate else Probe(0.0, probe.sent_bps, 2.26e9, 50.0)

    found = search(near_miss, SearchRule(resolution=0.05, max_probes=8))
    assert len(asked) == 3 and found.resolved
    assert 2.25e9 / 1.05 <= found.rate_bps <= 2.25e9
