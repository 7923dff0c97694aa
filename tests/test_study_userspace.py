"""The userspace study's profiles (seed 004): each an ethtool profile for the
namespaces plus the datapath setting of offlab-fwd, as data; the plan key; the order."""

from __future__ import annotations

import pytest

from offlab.hosts.offloads import GRO, GSO
from offlab.run.plan import PlanError, parse
from offlab.records import DatapathSetting, Params
from offlab.studies.userspace.plan import DIRECT, PROFILES, study_profiles


@pytest.mark.parametrize("name, mode, a_tso, b_tso", [
    ("none", "pass", False, False), ("kernel-gso", "pass", False, False),
    ("engine-gso", "gso", True, False), ("tso-pass", "pass", True, True),
])
def test_gso_study_profiles(name, mode, a_tso, b_tso):
    setting = PROFILES[name].datapath
    assert setting is not None and setting.forwarder
    assert (setting.mode, "tso4" in setting.port("a").offloads, "tso4" in setting.port("b").offloads) \
        == (mode, a_tso, b_tso)
    assert "csum" in setting.port("a").offloads


def test_engine_gro_merges_into_a_tso_egress_and_kernel_gro_uses_napi():
    engine, kernel = PROFILES["engine-gro"].datapath, PROFILES["kernel-gro"].datapath
    assert engine.mode == "gro" and engine.port("b").offloads == {"csum", "tso4", "tso6", "ecn"}
    assert kernel.mode == "pass" and kernel.port("b").napi and not kernel.port("a").napi


def test_profiles_carry_only_ethtool_features():
    for profile in PROFILES.values():
        assert set(profile.offloads.features) <= {GSO, GRO}, profile.offloads.name
    gso_off = [n for n, p in PROFILES.items() if p.offloads.features.get(GSO) is False]
    assert gso_off == ["none"]


def test_direct_profile_replaces_the_forwarder_and_comes_first():
    assert DIRECT.datapath == DatapathSetting(forwarder=False) and DIRECT.offloads.features == {}
    names = [p.offloads.name for p in study_profiles(["gro", "direct", "gso"])]
    assert names == ["veth-direct", "none", "kernel-gso", "engine-gso", "tso-pass",
                     "kernel-gro", "engine-gro"]


def test_a_plan_with_datapath_studies_expands_to_their_profiles():
    plan = parse('name = "u"\nruns = 1\nduration = 1.0\nscenarios = ["vm2vm"]\nmtus = [1500]\n'
                 'traffic = ["tcp"]\ndatapath = ["direct", "gro"]\n', "test")
    assert [c.profile.name for c in plan.cases] == ["veth-direct", "kernel-gso", "kernel-gro", "engine-gro"]
    assert all(c.datapath == PROFILES[c.profile.name].datapath and c.params == Params() for c in plan.cases)


def test_datapath_studies_refuse_a_scenario_without_a_forwarder():
    with pytest.raises(PlanError, match="no userspace datapath"):
        parse('name = "u"\nruns = 1\nduration = 1.0\nscenarios = ["bare"]\nmtus = [1500]\n'
              'traffic = ["tcp"]\ndatapath = ["gso"]\n', "test")
