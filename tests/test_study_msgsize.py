"""The message-size study's plan keys: sizes and directions, and the built-in plan."""

import pytest

from offlab.run.plan import PlanError, load, parse
from offlab.records import TrafficSpec
from offlab.studies.msgsize import plan as sweep
from offlab.studies.msgsize.plan import Sweep, SweepError

TCP = TrafficSpec("tcp", duration_s=2.0, warmup_s=1.0)
UDP = TrafficSpec("udp", duration_s=2.0, warmup_s=1.0, udp_payload=1472)

BASE_PLAN = """
name = "t"
runs = 2
duration = 2.0
scenarios = ["bare"]
mtus = [1500]
traffic = ["tcp"]
sequences = ["all-on"]
"""


def test_seed_range_is_thirteen_powers_of_two_from_64_to_256k():
    sizes = sweep.message_sizes({"from": 64, "to": 262144})
    assert sizes[0] == 64 and sizes[-1] == 262144 and len(sizes) == 13
    assert all(b == 2 * a for a, b in zip(sizes, sizes[1:]))


def test_a_single_point_range_is_allowed():
    assert sweep.powers_of_two(4096, 4096) == (4096,)


@pytest.mark.parametrize("bad, complaint", [
    ({"from": 100, "to": 1024}, "not a power of two"),
    ({"from": 1024, "to": 64}, "swap them"),
    ({"from": 64}, "a range is"),
    ({"from": 64, "to": 128, "step": 2}, "a range is"),
    ([64, 64], "twice"),
    ([0], "whole number of bytes"),
    ([2 << 20], "whole number of bytes"),
    ([True], "whole number of bytes"),
    ("64", "must be a list"),
])
def test_bad_message_sizes_say_what_to_fix(bad, complaint):
    with pytest.raises(SweepError, match=complaint):
        sweep.message_sizes(bad)


def test_tcp_is_multiplied_by_sizes_then_directions_in_order():
    chosen = Sweep(message_sizes=(64, 128), bidirectional=(False, True))
    out = sweep.expand_traffic([TCP], chosen)
    assert [(t.message_size, t.bidirectional) for t in out] == [
        (64, False), (64, True), (128, False), (128, True)]
    assert [t.label for t in out] == ["tcp-m64", "tcp-m64-bidir", "tcp-m128", "tcp-m128-bidir"]
    assert all(t.duration_s == 2.0 and t.warmup_s == 1.0 for t in out)


def test_udp_keeps_its_datagram_size_and_only_takes_directions():
    out = sweep.expand_traffic([UDP], Sweep(message_sizes=(64, 128), bidirectional=(False, True)))
    assert [(t.udp_payload, t.message_size, t.bidirectional) for t in out] == [
        (1472, None, False), (1472, None, True)]


def test_no_sweep_leaves_workloads_as_they_are():
    assert sweep.expand_traffic([TCP, UDP], Sweep()) == [TCP, UDP]


@pytest.mark.parametrize("doc, complaint", [
    ({"bidirectional": "yes"}, "true, false"),
    ({"bidirectional": []}, "true, false"),
])
def test_bad_sweep_keys(doc, complaint):
    with pytest.raises(SweepError, match=complaint):
        sweep.parse(doc)


def test_plan_file_with_sweep_keys_expands_the_cross_product():
    plan = parse(BASE_PLAN + 'message_sizes = [1024, 65536]\nbidirectional = [false, true]\n',
                 "t.toml")
    assert [c.key for c in plan.cases] == [
        "bare/mtu1500/both:all-on/tcp-m1024", "bare/mtu1500/both:all-on/tcp-m1024-bidir",
        "bare/mtu1500/both:all-on/tcp-m65536", "bare/mtu1500/both:all-on/tcp-m65536-bidir"]


def test_plan_errors_name_the_file_and_key():
    with pytest.raises(PlanError, match=r"^t.toml: key 'message_sizes\.from': 100 is not"):
        parse(BASE_PLAN + "message_sizes = { from = 100, to = 1024 }\n", "t.toml")


def test_builtin_msgsize_plan_is_the_seed_001_sweep():
    plan = load("msgsize")
    sizes = sorted({c.traffic.message_size for c in plan.cases})
    assert sizes[0] == 64 and sizes[-1] == 256 * 1024 and len(sizes) == 13
    assert {c.traffic.bidirectional for c in plan.cases} == {False, True}
    profiles = {c.profile.name for c in plan.cases}
    assert profiles == {"all-on", "gro+rxcsum-off", "all-off"}
    assert len(plan.cases) == 13 * 2 * 3
