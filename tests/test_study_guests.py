"""The guests study (real QEMU guests): its plan keys expand the `qemu` scenario into one
topology per path × overlay × backend (× offlab-fwd mode) × virtio profile, as data;
keys without the scenario, modes without vhost-user and unknown values are one line."""

from __future__ import annotations

import pytest

from offlab.run.plan import PlanError, parse
from offlab.records import Params
from offlab.vm.profile import VIRTIO_PROFILES

HEAD = 'name = "g"\nruns = 1\nduration = 1.0\nmtus = [1500]\ntraffic = ["tcp"]\nsequences = ["all-on"]\n'


def test_qemu_expands_to_one_topology_per_combination():
    plan = parse(HEAD + 'scenarios = ["qemu"]\nguest_paths = ["vm2vm", "vm2host"]\noverlays = ["none", "vxlan"]\n'
                 'backends = ["tap", "vhost-user"]\nfwd_modes = ["pass", "gro"]\nvirtio = ["all-on"]\n', "test")
    topologies = {c.topology for c in plan.cases}
    assert len(topologies) == 2 * 2 * (1 + 2)
    assert Params(path="vm2vm", overlay="vxlan", backend="vhost-user", fwd="gro", virtio="all-on") in topologies
    assert Params(path="vm2host", overlay="none", backend="tap", virtio="all-on") in topologies
    labels = {c.scenario_label for c in plan.cases}
    assert "qemu-vm2vm-vxlan-vu-gro-all-on" in labels and "qemu-vm2host-tap-all-on" in labels
    assert all(c.datapath is None for c in plan.cases)  # the backend is the topology's


def test_defaults_are_one_plain_vm2vm_over_tap_with_every_offload_offered():
    plan = parse(HEAD + 'scenarios = ["qemu"]\n', "test")
    assert [c.topology for c in plan.cases] == [Params(path="vm2vm", overlay="none", backend="tap", virtio="all-on")]


def test_virtio_profiles_name_qemu_device_options():
    options = {"csum", "guest_csum", "guest_tso4", "guest_tso6", "guest_ecn", "guest_ufo",
               "host_tso4", "host_tso6", "host_ecn", "host_ufo", "mrg_rxbuf"}
    for name, profile in VIRTIO_PROFILES.items():
        assert set(profile) <= options, name
    assert VIRTIO_PROFILES["host-tso-off"]["host_tso4"] is False


@pytest.mark.parametrize("extra, message", [
    ('scenarios = ["bare"]\nbackends = ["tap"]\n', "only the 'qemu' scenario takes 'backends'"),
    ('scenarios = ["qemu"]\nfwd_modes = ["gro"]\n', "offlab-fwd runs only on vhost-user paths"),
    ('scenarios = ["qemu"]\nbackends = ["virtualbox"]\n', "backends"),
    ('scenarios = ["qemu"]\nvirtio = ["turbo"]\n', "virtio"),
])
def test_bad_guest_keys_are_one_line(extra, message):
    with pytest.raises(PlanError, match=message) as caught:
        parse(HEAD + extra, "test")
    assert "\n" not in str(caught.value)
