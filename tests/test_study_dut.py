"""The DUT-layout study's plan key (seed 002): directions as a topology parameter,
labels for people, one-line errors, and the built-in vxlan plan."""

import pytest

from offlab.run.plan import PlanError, load, parse
from offlab.records import Params

BASE_PLAN = """
name = "t"
runs = 2
duration = 2.0
scenarios = ["vxlan", "bare"]
mtus = [1500]
traffic = ["tcp"]
sequences = ["all-on"]
"""


def test_directions_are_a_topology_parameter_with_a_label():
    plan = parse(BASE_PLAN + 'dut = ["rcv", "snd"]\n', "t.toml")
    assert [(c.scenario, c.topology, c.label) for c in plan.cases] == [
        ("vxlan", Params(dut="rcv"), "vxlan-dut-rcv"), ("vxlan", Params(dut="snd"), "vxlan-dut-snd"),
        ("bare", Params(dut="rcv"), "bare-dut-rcv"), ("bare", Params(dut="snd"), "bare-dut-snd")]
    assert plan.cases[0].key == "vxlan-dut-rcv/mtu1500/both:all-on/tcp"


def test_without_the_key_scenarios_keep_their_own_layout():
    plan = parse(BASE_PLAN, "t.toml")
    # no DUT layout; the offloads study's NIC-like wire is their only topology parameter
    assert all(dict(c.topology) == {"wire": "nic"} and not c.label for c in plan.cases)


@pytest.mark.parametrize("extra, complaint", [
    ('dut = ["rcv", "rcv"]\n', "each once"),
    ('dut = ["up"]\n', "not known"),
    ('dut = ["rcv"]\nsteer_rx_softirq = false\n', "steers the DUT's softirq"),
])
def test_bad_dut_keys(extra, complaint):
    with pytest.raises(PlanError, match=complaint):
        parse(BASE_PLAN + extra, "t.toml")


def test_a_scenario_without_dut_layout_is_refused():
    text = BASE_PLAN.replace('["vxlan", "bare"]', '["vm2vm"]') + 'dut = ["rcv"]\n'
    with pytest.raises(PlanError, match="no DUT layout"):
        parse(text, "t.toml")


def test_builtin_vxlan_plan_is_the_seed_002_study():
    plan = load("vxlan")
    assert plan.runs == 10 and all(c.traffic.duration_s == 60 for c in plan.cases)
    assert {c.scenario_label for c in plan.cases} == {
        "vxlan-dut-rcv", "vxlan-dut-snd", "bare-dut-rcv", "bare-dut-snd"}
    assert {c.traffic.label for c in plan.cases} == {"tcp", "udp1472", "udp18"}
    assert {c.profile.name for c in plan.cases} == {"all-on"}
    short = plan.with_overrides(runs=3, duration=3)
    assert short.runs == 3 and all(c.traffic.duration_s == 3 for c in short.cases)
