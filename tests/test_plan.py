"""Plan parsing: the built-in plans, the case matrix, and one-line errors with a fix."""

import pytest

from offlab.measure import capacity
from offlab.run import plan
from offlab.run.plan import PlanError, parse

GOOD = """
name = "t"
runs = 2
duration = 1.5
warmup = 0.5
scenarios = ["bare", "vxlan"]
mtus = [1500]
traffic = ["tcp", "udp18"]
sequences = ["tx", "rx"]
"""


def test_builtin_plans_exist_and_parse():
    assert {"quick", "offloads"} <= set(plan.builtin_names())
    quick = plan.load("quick")
    # 2 scenarios × (TCP × 2 tx profiles on the NIC wire + TCP × 2 rx profiles on the MTU
    # wire, each wire with its own all-on), each case paced once more, for at least 5 s
    # (issue 37); no UDP capacity, which never advised on 2 cores (issue 40: ≤ 6 min)
    assert len(quick.cases) == 2 * (2 + 2) + 2 * (2 + 2) and quick.runs == 3
    assert {c.traffic.protocol for c in quick.cases} == {"tcp"}
    paced = [c for c in quick.cases if c.traffic.service_demand]
    # each paced stream carries the TCP request/response probe: latency at one fixed load
    assert len(paced) == 8 and all(c.traffic.service_demand == 0.8 and c.traffic.latency_probe
                                   and c.traffic.duration_s >= 5 for c in paced)
    bare_tx = [c.profile.name for c in quick.cases
               if c.scenario_label == "bare" and c.traffic.label == "tcp"]
    assert bare_tx == ["all-on", "tso-off"]
    # every sequence on a wire that hands the receiver MTU frames: none on veth's own
    assert {c.topology.get("wire") for c in quick.cases} == {"nic", "mtu"}
    rx = [dict(c.profile.features) for c in quick.cases
          if c.scenario_label == "vxlan-mtu-wire" and c.traffic.label == "tcp"]
    assert rx[1:] == [{"generic-receive-offload": False}]
    wired = [c for c in quick.cases if c.topology.get("wire") == "mtu"]
    assert {c.profile.side for c in wired} == {"both", "rx"} and all(c.traffic.protocol == "tcp" for c in wired)
    assert all(c.traffic.mode == "capacity" for c in quick.cases if c.traffic.protocol == "udp")
    assert all(c.traffic.latency_probe for c in quick.cases
               if c.traffic.protocol == "tcp" and not c.traffic.service_demand)
    offl = plan.load("offloads")
    assert len(offl.cases) == 2 * 2 * 3 * 6 and offl.runs == 10
    assert {c.mtu for c in offl.cases} == {1500, 9000}
    assert {c.traffic.label for c in offl.cases} == {"tcp", "udp1472", "udp18"}


def test_quick_plan_fits_five_minutes():
    quick = plan.load("quick")
    streams = sum(c.traffic.warmup_s + c.traffic.duration_s for c in quick.cases
                  if c.traffic.mode == "stream") * quick.runs
    searches = sum(capacity.expected_seconds(c.traffic) for c in quick.cases
                   if c.traffic.mode == "capacity") * quick.runs
    # Traffic itself, each search at its probe budget and its verification trial; builds,
    # ethtool and the report fit in the rest of five minutes. Issue #30 added about 60 s:
    # single-off TCP profiles and the paced (service-demand) runs.
    assert streams + searches <= 300


def test_cases_in_order_and_all_on_shared():
    p = parse(GOOD, "t.toml")
    keys = [c.key for c in p.cases]
    assert keys[0] == "bare/mtu1500/both:all-on/tcp"
    assert sum(k.endswith("all-on/tcp") for k in keys) == 2  # once per scenario
    vx_last_tx = [c for c in p.cases if c.scenario == "vxlan" and c.profile.name == "tso+txcsum+gso-off"][0]
    assert "tx-udp_tnl-segmentation" in vx_last_tx.profile.features
    udp = [c for c in p.cases if c.traffic.label == "udp18"][0]
    assert udp.traffic.udp_payload == 18 and udp.traffic.warmup_s == 0.5


def test_custom_profiles_and_single_mode():
    p = parse(GOOD.replace('sequences = ["tx", "rx"]', 'sequences = ["rx-single"]') +
              '[[profiles]]\nname = "no-gro-anywhere"\nside = "both"\noff = ["generic-receive-offload"]\n', "t.toml")
    names = {c.profile.name for c in p.cases}
    assert names == {"all-on", "only-gro-off", "only-rxcsum-off", "no-gro-anywhere"}


def test_overrides():
    p = parse(GOOD, "t.toml").with_overrides(runs=5, duration=2.5)
    assert p.runs == 5 and all(c.traffic.duration_s == 2.5 for c in p.cases)
    with pytest.raises(PlanError, match="--runs 0"):
        parse(GOOD, "t.toml").with_overrides(runs=0)
    with pytest.raises(PlanError, match="whole seconds"):
        parse(GOOD, "t.toml").with_overrides(duration=1.2)


@pytest.mark.parametrize("change, key, hint", [
    (("runs = 2", "runs = 0"), "runs", "from 1 to 1000"),
    (("runs = 2", "runs = 100000000000"), "runs", "from 1 to 1000"),
    (("duration = 1.5", "duration = 1e300"), "duration", "at most 3600"),
    (("duration = 1.5", "duration = nan"), "duration", "number of seconds"),
    (("runs = 2", 'runs = "many"'), "runs", "whole number"),
    (("duration = 1.5", "duration = -1"), "duration", "more than 0"),
    (("warmup = 0.5", "warmup = 0.55"), "warmup", "multiple of 0.1"),
    (("duration = 1.5", "duration = 1.2"), "'warmup' + 'duration'", "duration of 0.5 or 1.5 s"),
    (('mtus = [1500]', 'mtus = [40]'), "mtus", "from 68 to 65535"),
    (('scenarios = ["bare", "vxlan"]', 'scenarios = ["nvgre"]'), "scenarios", "'bare', 'geneve', 'gre'"),
    (('traffic = ["tcp", "udp18"]', 'traffic = ["sctp"]'), "traffic", "'tcp'"),
    (('traffic = ["tcp", "udp18"]', 'traffic = ["tcp", "tcp"]'), "traffic", "twice"),
    (('sequences = ["tx", "rx"]', 'sequences = []'), "sequences", "no offload profiles"),
    (('name = "t"', 'name = "t"\nrepeats = 3'), "repeats", "unknown key"),
    (('runs = 2\n', ''), "runs", "missing"),
])
def test_errors_are_one_line_naming_file_key_and_fix(change, key, hint):
    text = GOOD.replace(*change)
    with pytest.raises(PlanError) as caught:
        parse(text, "bad.toml")
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("bad.toml: ")
    assert key in message and hint in message


def test_invalid_toml_and_missing_file(tmp_path):
    with pytest.raises(PlanError, match="^x.toml: not valid TOML"):
        parse("runs = = 3", "x.toml")
    with pytest.raises(PlanError, match="no such plan file"):
        plan.load(str(tmp_path / "nope.toml"))


def test_bad_custom_profile():
    text = GOOD + '[[profiles]]\nname = "x"\nside = "tx"\noff = ["tso"]\n'
    with pytest.raises(PlanError, match=r"profiles\[1\]\.off"):
        parse(text, "t.toml")


def test_a_profile_limited_to_tcp_is_not_measured_with_udp():
    text = GOOD + ('[[profiles]]\nname = "only-tcp"\nside = "tx"\noff = ["tcp-segmentation-offload"]\n'
                   'protocols = ["tcp"]\n')
    cases = parse(text, "t.toml").cases
    limited = {c.traffic.protocol for c in cases if c.profile.name == "only-tcp"}
    assert limited == {"tcp"} and any(c.traffic.protocol == "udp" for c in cases)
    with pytest.raises(PlanError, match=r"profiles\[1\]\.protocols"):
        parse(text.replace('["tcp"]', '["sctp"]'), "t.toml")
