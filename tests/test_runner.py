"""The runner's loop through its seams — a recording sink, a topology builder and a
measurement that need no namespaces: what is left to measure (resume), one build per
topology, round-robin interleaving, retries, the adaptive stop, and resuming a run
interrupted half-way."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field

import pytest

from offlab.run import plan
from offlab.records import CaseSpec, Params, RunSettings, Sample
from offlab.run.runner import Runner, by_topology, pending
from offlab.topology import Endpoint, Interrupted
from offlab.measure.traffic import IperfError
from tests.fixtures.recording_host import RecordingHost

GOOD = """
name = "t"
runs = 3
duration = 1.5
warmup = 0.5
scenarios = ["bare", "vxlan"]
mtus = [1500, 9000]
traffic = ["tcp"]
sequences = ["rx"]
"""


def test_pending_skips_finished_cases_and_starts_at_the_next_repetition():
    cases = plan.parse(GOOD, "t.toml").cases
    done = {cases[0].key: 3, cases[1].key: 1}
    work = pending(cases, 3, done)
    assert cases[0] not in [c for c, _ in work]
    assert (cases[1], 1) in work and (cases[2], 0) in work
    assert len(work) == len(cases) - 1


def test_one_group_per_topology_in_plan_order():
    cases = plan.parse(GOOD, "t.toml").cases
    groups = list(by_topology(pending(cases, 3, {})))
    nic = Params(wire="nic")  # the offloads study's NIC-like wire (issue 37)
    assert [key for key, _ in groups] == [("bare", 1500, nic), ("bare", 9000, nic),
                                          ("vxlan", 1500, nic), ("vxlan", 9000, nic)]
    assert all(len(members) == 3 for _, members in groups)  # all-on, gro-off, gro+rxcsum-off


# --- the loop through its seams ---------------------------------------------------------

def _answer(args: list[str]) -> str:
    return ""  # ethtool -k and the counter files read as empty: nothing recorded, nothing grew


class FakeTopology:
    """A topology that builds nothing: two recording hosts."""

    iperf3_port = 5201

    def __init__(self, log: list[str], scenario: str):
        self.log, self.scenario = log, scenario
        self.tx, self.rx = RecordingHost("tx", _answer), RecordingHost("rx", _answer)

    def __enter__(self):
        self.log.append(f"build {self.scenario}")
        return self

    def __exit__(self, *exc):
        self.log.append(f"teardown {self.scenario}")

    sender = property(lambda self: Endpoint("sender", self.tx, "10.0.0.1", 0))
    receiver = property(lambda self: Endpoint("receiver", self.rx, "10.0.0.2", 1))
    roles = property(lambda self: {"sender": 0, "receiver": 1})

    def offload_interfaces(self):
        return []

    def counter_hosts(self):
        return {"tx": self.tx, "rx": self.rx}

    def nic_interfaces(self):
        return {}

    def apply_datapath(self, setting):
        return {}

    def datapath_counters(self):
        return {}

    def napi_snapshot(self):
        return set()

    def pin_napi_threads(self, before):
        return {}


@dataclass
class Lab:
    """Measurements that return a scripted throughput per case and can fail or stop."""

    rates: dict[str, list[float]] = field(default_factory=dict)
    fail_times: int = 0
    interrupt_after: int | None = None
    log: list[str] = field(default_factory=list)

    def build(self, scenario, mtu, params, **options):
        return FakeTopology(self.log, scenario)

    def measure(self, topo, case, repetition, state, datapath, context):
        if self.interrupt_after is not None and len([e for e in self.log if e.startswith("measure")]) >= self.interrupt_after:
            raise Interrupted(2)
        if self.fail_times:
            self.fail_times -= 1
            raise IperfError("iperf3 client: the server went away")
        self.log.append(f"measure {case.profile.name} #{repetition}")
        rates = self.rates.get(case.profile.name, [10e9])
        return Sample(case.key, repetition, 0.0, 1.0, rates[repetition % len(rates)], 1e10)


class Sink:
    def __init__(self):
        self.samples: list[tuple[str, int]] = []
        self.outcomes = []
        self.stacks = []

    def add_sample(self, run_id, case, sample):
        self.samples.append((case.profile.name, sample.repetition))

    def record_adaptive(self, run_id, outcome):
        self.outcomes.append(outcome)

    def record_stack(self, run_id, place, host, config):
        self.stacks.append((place, host, config))


@contextmanager
def _no_iperf_server(monkeypatch):
    class Server:
        port, pid = 5201, None

        def __init__(self, *args):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            pass

        def ensure_running(self):
            pass

        def close(self):
            pass

    monkeypatch.setattr("offlab.run.runner.IperfServer", Server)
    yield


def _cases(text: str = GOOD) -> tuple[CaseSpec, ...]:
    return tuple(c for c in plan.parse(text, "t.toml").cases if c.scenario == "bare" and c.mtu == 1500)


def _runner(lab: Lab, sink: Sink, settings: RunSettings, history=None) -> Runner:
    return Runner(sink, "run", settings, show_progress=False, build=lab.build, measure=lab.measure,
                  history=history)


def test_repetitions_interleave_round_robin_over_a_groups_cases(monkeypatch):
    lab, sink = Lab(), Sink()
    with _no_iperf_server(monkeypatch):
        _runner(lab, sink, RunSettings(repetitions=2)).execute(_cases())
    assert sink.samples == [("all-on", 0), ("gro-off", 0), ("gro+rxcsum-off", 0),
                            ("all-on", 1), ("gro-off", 1), ("gro+rxcsum-off", 1)]
    assert lab.log[0] == "build bare" and lab.log[-1] == "teardown bare"
    # each host's stack, once per topology
    assert [(place, host) for place, host, _ in sink.stacks] == [("bare · MTU 1500", "tx"), ("bare · MTU 1500", "rx")]
    assert sink.stacks[0][2]["cpu.governor"].startswith("none")


def test_a_failed_repetition_is_retried_then_kept(monkeypatch):
    lab, sink = Lab(fail_times=2), Sink()
    with _no_iperf_server(monkeypatch):
        stats = _runner(lab, sink, RunSettings(repetitions=1)).execute(_cases()[:1])
    assert stats.retries == 2 and sink.samples == [("all-on", 0)]


def test_three_failures_end_the_run(monkeypatch):
    lab, sink = Lab(fail_times=3), Sink()
    with _no_iperf_server(monkeypatch), pytest.raises(IperfError):
        _runner(lab, sink, RunSettings(repetitions=1)).execute(_cases()[:1])
    assert sink.samples == [] and lab.log[-1] == "teardown bare"


def test_adaptive_stops_each_case_when_its_ci_is_narrow_enough(monkeypatch):
    steady, noisy = [10e9, 10.01e9, 9.99e9], [5e9, 15e9, 8e9, 12e9]
    lab, sink = Lab(rates={"all-on": steady, "gro-off": noisy, "gro+rxcsum-off": steady}), Sink()
    settings = RunSettings(repetitions=3, ci_target=0.05, min_runs=3, max_runs=6)
    with _no_iperf_server(monkeypatch):
        _runner(lab, sink, settings).execute(_cases())
    counts = {name: sum(1 for n, _ in sink.samples if n == name) for name, _ in sink.samples}
    assert counts == {"all-on": 3, "gro-off": 6, "gro+rxcsum-off": 3}
    reached = {o.case_key.split(":")[1].split("/")[0]: o.reached for o in sink.outcomes}
    assert reached == {"all-on": True, "gro-off": False, "gro+rxcsum-off": True}


def test_an_interrupted_run_resumes_where_it_stopped(monkeypatch):
    cases = _cases()
    first, sink = Lab(interrupt_after=4), Sink()
    with _no_iperf_server(monkeypatch), pytest.raises(Interrupted):
        _runner(first, sink, RunSettings(repetitions=2)).execute(cases)
    assert len(sink.samples) == 4 and first.log[-1] == "teardown bare"
    done = {c.key: sum(1 for n, _ in sink.samples if n == c.profile.name) for c in cases}
    second = Lab()
    with _no_iperf_server(monkeypatch):
        _runner(second, sink, RunSettings(repetitions=2)).execute(cases, done)
    assert sorted(sink.samples) == sorted((c.profile.name, r) for c in cases for r in range(2))
    assert [e for e in second.log if e.startswith("measure")] == ["measure gro-off #1", "measure gro+rxcsum-off #1"]


def test_a_capacity_search_runs_the_rules_minimum_whatever_its_spread(monkeypatch):
    text = GOOD.replace('traffic = ["tcp"]', 'traffic = ["udp1472"]\nudp_rate = "capacity"')
    cases = _cases(text)[:1]
    lab, sink = Lab(rates={"all-on": [1e9, 3e9, 0.5e9, 2e9]}), Sink()
    with _no_iperf_server(monkeypatch):
        _runner(lab, sink, RunSettings(3, ci_target=0.05, min_runs=3, max_runs=6)).execute(cases)
    assert len(sink.samples) == 3


def test_paced_cases_run_after_their_saturated_siblings_at_a_fraction_of_the_slowest(monkeypatch):
    text = GOOD + "\n[service_demand]\npercent = 80\nduration = 5.7\nwarmup = 0.3\n"
    cases = _cases(text)
    paced = [c for c in cases if c.traffic.service_demand]
    assert [c.traffic.label for c in paced] == ["tcp-sd80"] * 3 and paced[0].traffic.rate_bps is None
    seen = []

    class Pacing(Lab):
        def measure(self, topo, case, repetition, state, datapath, context):
            seen.append((case.traffic.label, case.profile.name, case.traffic.rate_bps))
            return super().measure(topo, case, repetition, state, datapath, context)

    lab = Pacing(rates={"all-on": [20e9], "gro-off": [10e9], "gro+rxcsum-off": [15e9]})
    sink = Sink()
    with _no_iperf_server(monkeypatch):
        _runner(lab, sink, RunSettings(3, ci_target=0.05, min_runs=3, max_runs=6)).execute(cases)
    saturated = [s for s in seen if s[0] == "tcp"]
    assert seen[:len(saturated)] == saturated  # every saturated sample first
    rates = {rate for label, _, rate in seen if label == "tcp-sd80"}
    assert rates == {0.8 * 10e9}  # 80 % of the slowest saturated profile (gro-off)
    assert sum(1 for s in seen if s[0] == "tcp-sd80") == 9  # the rule's minimum, each
