"""`offlab compare` on real runs: two runs of one small plan (an A/A: two builds of the
same topology minutes apart) flag no more than chance allows, and a real 10 % change —
the same case offered 10 % less — is caught among cases that did not change."""

import dataclasses

import pytest
from scipy import stats as scistats

from offlab.report.comparison import compare, regressions
from offlab.run.plan import parse
from offlab.records import RunInfo
from offlab.run.runner import Runner
from offlab.store.store import RunResults

from .runs import ListSink

pytestmark = pytest.mark.alone  # an A/A comparison: a neighbour's load would be a difference between the runs


PLAN = """
name = "compare-live"
runs = 6
duration = 0.5
warmup = 0.5
scenarios = ["bare"]
mtus = [1500]
traffic = ["udp1472"]
sequences = ["tx-single"]
udp_rate = "{rate}"
"""


def _run(name: str, rate: str) -> RunResults:
    plan = parse(PLAN.format(rate=rate), f"{name}.toml")
    sink = ListSink()
    Runner(sink, name, plan.settings(), show_progress=False).execute(plan.cases)
    samples: dict[str, list] = {}
    for case, sample in sink.samples:
        samples.setdefault(case.key, []).append(sample)
    info = RunInfo(name, "compare-live", 0.0, "", "kernel", "cpu", 2)
    return RunResults(info, "complete", tuple(plan.cases), {k: tuple(v) for k, v in samples.items()})


def _as_rate(results: RunResults, key: str, rate_bps: float):
    """The case `key` of a run relabelled as if offered `rate_bps` (the A/B's seam: the
    same case with its offered rate, and so its throughput, really 10 % lower)."""
    case = next(c for c in results.cases if c.key == key)
    renamed = dataclasses.replace(case, traffic=dataclasses.replace(case.traffic, rate_bps=rate_bps))
    samples = tuple(dataclasses.replace(s, case_key=renamed.key) for s in results.samples[key])
    return renamed, samples


def test_a_a_stays_within_chance_and_a_real_ten_percent_change_is_caught():
    a, again, lower = _run("a", "200M"), _run("a2", "200M"), _run("b", "180M")
    aa = compare(a, again)
    assert len(aa.matched) == 4
    tests = aa.tests
    assert len(aa.significant) <= scistats.binom.ppf(0.999, tests, 0.05)
    assert regressions(aa, 0.0) == [] or len(regressions(aa, 0.0)) <= 1
    # B: the second run, but its all-on case measured at 180M (received ~10 % less).
    key = next(c.key for c in lower.cases if c.profile.name == "all-on")
    case, samples = _as_rate(lower, key, 200e6)
    b_cases = tuple(case if c.key == case.key else c for c in again.cases)
    b = dataclasses.replace(again, cases=b_cases, samples={**again.samples, case.key: samples})
    ab = compare(a, b)
    changed = next(m for m in ab.matched if m.key == case.key)
    verdict = changed.throughput_verdict
    assert -0.13 < verdict.change.ratio < -0.07
    assert verdict.flagged and verdict.discovery and verdict.mde < 0.10
    assert any(line.startswith(case.key) for line in regressions(ab, 0.05))
    assert len(ab.significant) <= 1 + scistats.binom.ppf(0.999, tests, 0.05)
