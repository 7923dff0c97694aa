"""Unit: a userspace profile → offlab-fwd's argument list, and its stats JSON (recorded
from a real engine-GRO run) → flat sample counters."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from offlab import datapath
from offlab.datapath import DIRECT_PROFILE, PROFILES, datapath_of, study_profiles
from offlab.fwd import (FwdConfig, FwdError, PortSpec, counters, delta, find_binary, fwd_args,
                        parse_stats, port_roles)
from offlab.plan import PlanError, parse
from offlab.records import OffloadProfile

FIXTURE = Path(__file__).parent / "fixtures" / "fwd_stats_engine_gro.json"
A_PORT = "tap:ofl-ta@ofl-19453-a"
B_PORT = "tap:ofl-tb@ofl-19453-b"


def config_for(name: str, cpu: int | None = 1) -> FwdConfig:
    path = datapath_of(PROFILES[name])
    a = PortSpec("tap", "ofl-ta", "ofl-1-a", path.a.offloads)
    b = PortSpec("tap", "ofl-tb", "ofl-1-b", path.b.offloads, path.b.napi)
    return FwdConfig(path.mode, (a, b), cpu)


def test_engine_gro_profile_gives_gro_mode_and_a_tso_egress():
    args = fwd_args("/bin/offlab-fwd", config_for("engine-gro"), "/tmp/s.json")
    assert args == [
        "/bin/offlab-fwd",
        "--port", "tap:ofl-ta@ofl-1-a,offloads=csum",
        "--port", "tap:ofl-tb@ofl-1-b,offloads=csum+tso4+tso6+ecn",
        "--mode", "gro", "--stats-file", "/tmp/s.json", "--cpu", "1",
    ]


def test_kernel_gro_profile_puts_napi_on_the_egress_tap_only():
    args = fwd_args("fwd", config_for("kernel-gro", cpu=None), "s")
    assert args[1:5] == ["--port", "tap:ofl-ta@ofl-1-a,offloads=csum",
                         "--port", "tap:ofl-tb@ofl-1-b,offloads=csum,napi"]
    assert "--cpu" not in args and args[args.index("--mode") + 1] == "pass"


@pytest.mark.parametrize("name, mode, a_tso, b_tso", [
    ("none", "pass", False, False), ("kernel-gso", "pass", False, False),
    ("engine-gso", "gso", True, False), ("tso-pass", "pass", True, True),
])
def test_gso_study_profiles(name, mode, a_tso, b_tso):
    path = datapath_of(PROFILES[name])
    assert (path.mode, "tso4" in path.a.offloads, "tso4" in path.b.offloads) == (mode, a_tso, b_tso)
    assert not path.direct and "csum" in path.a.offloads


def test_only_none_turns_the_senders_gso_off():
    gso_off = [n for n, p in PROFILES.items() if p.features.get("generic-segmentation-offload") is False]
    assert gso_off == ["none"]


def test_every_profile_names_exactly_one_mode():
    for profile in PROFILES.values():
        modes = [k for k, v in profile.features.items() if k.startswith("fwd.mode.") and v]
        assert len(modes) == 1, profile.name


def test_two_modes_are_refused():
    profile = OffloadProfile("x", "both", {"fwd.mode.gro": True, "fwd.mode.gso": True})
    with pytest.raises(ValueError, match="exactly one"):
        datapath_of(profile)


def test_direct_profile_and_study_order():
    assert datapath_of(DIRECT_PROFILE).direct
    names = [p.name for p in study_profiles(["gro", "direct", "gso"])]
    assert names == ["veth-direct", "none", "kernel-gso", "engine-gso", "tso-pass",
                     "kernel-gro", "engine-gro"]


def test_datapath_features_are_not_ethtool_features():
    plain = datapath.ethtool_features(PROFILES["kernel-gro"].features)
    assert plain == {"generic-segmentation-offload": True, "generic-receive-offload": True}


def test_port_spec_refuses_napi_on_a_packet_port_and_unknown_offloads():
    with pytest.raises(ValueError):
        PortSpec("packet", "ofl-hm", "ns", frozenset({"csum"}), napi=True)
    with pytest.raises(ValueError):
        PortSpec("tap", "ofl-ta", "ns", frozenset({"lro"}))
    assert PortSpec("packet", "ofl-hm", "ns").argument() == "packet:ofl-hm@ns,offloads=none"


def test_recorded_stats_parse_into_role_named_counters():
    stats = parse_stats(FIXTURE.read_text())
    assert (stats.event, stats.mode) == ("stats", "gro")
    roles = port_roles({"ports": [{"port": A_PORT}, {"port": B_PORT}]})
    flat = counters(stats, roles)
    assert flat["fwd:a>b:merged_packets"] == 220481
    assert flat["fwd:a>b:merged_super_packets"] == 8423
    assert flat["fwd:a>b:gro_refused.psh"] == 58
    assert flat["fwd:b>a:rx_packets"] == 3175
    assert all(key.startswith("fwd:") for key in flat)


def test_drops_are_flattened_by_category_and_reason():
    doc = json.loads(FIXTURE.read_text())
    first = next(iter(doc["directions"].values()))
    first["drops"] = {"virtio": {"bad gso size": 3}, "egress": {"no buffer": 1}}
    flat = parse_stats(json.dumps(doc)).directions[f"{A_PORT} -> {B_PORT}"]
    assert flat["drop.virtio.bad gso size"] == 3 and flat["drop.egress.no buffer"] == 1


def test_delta_keeps_only_what_grew():
    assert delta({"x": 5.0, "y": 1.0}, {"x": 7.0, "y": 1.0, "z": 2.0}) == {"x": 2.0, "z": 2.0}


@pytest.mark.parametrize("text", ["not json", "[]", '{"directions": 3}'])
def test_malformed_stats_are_a_typed_error(text):
    with pytest.raises(FwdError):
        parse_stats(text)


def test_missing_binary_says_how_to_build_it(monkeypatch, tmp_path):
    monkeypatch.setenv("OFFLAB_FWD", str(tmp_path / "nope"))
    with pytest.raises(FwdError, match="not an executable"):
        find_binary()


def test_no_binary_anywhere_says_make_build(monkeypatch, tmp_path):
    monkeypatch.delenv("OFFLAB_FWD", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(FwdError, match="build it with `make build`"):
        find_binary(tmp_path / "target" / "release" / "offlab-fwd")


def test_a_plan_with_datapath_studies_expands_to_their_profiles():
    plan = parse('name = "u"\nruns = 1\nduration = 1.0\nscenarios = ["vm2vm"]\nmtus = [1500]\n'
                 'traffic = ["tcp"]\ndatapath = ["direct", "gro"]\n', "test")
    assert [c.profile.name for c in plan.cases] == ["veth-direct", "kernel-gso", "kernel-gro",
                                                    "engine-gro"]


def test_datapath_studies_refuse_a_scenario_without_a_forwarder():
    with pytest.raises(PlanError, match="no userspace datapath"):
        parse('name = "u"\nruns = 1\nduration = 1.0\nscenarios = ["bare"]\nmtus = [1500]\n'
              'traffic = ["tcp"]\ndatapath = ["gso"]\n', "test")
