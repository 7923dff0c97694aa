"""One short real TCP case through offlab-fwd, VM to VM and VM to host: the sample has
throughput, the forwarder's counters and its datapath state, and nothing is left
behind (namespaces, forwarder processes)."""

import os
import subprocess

import pytest

from offlab.studies.userspace.plan import DIRECT, PROFILES
from offlab.topology.fwd import FwdError, find_binary
from offlab.records import CaseSpec, RunSettings, TrafficSpec
from offlab.run.runner import Runner
from offlab.topology import our_namespaces

from .runs import ListSink

try:
    BINARY = find_binary()
except FwdError as missing:
    pytest.skip(str(missing), allow_module_level=True)


def forwarders_running() -> list[str]:
    """Our forwarders: their --port arguments name this process's namespaces."""
    out = subprocess.run(["pgrep", "-f", f"offlab-fwd .*@ofl-{os.getpid()}-"],
                         capture_output=True, text=True)
    return out.stdout.split()


def run_cases(scenario, profiles):
    traffic = TrafficSpec("tcp", duration_s=1.0, warmup_s=1.0)
    cases = [CaseSpec(scenario, 1500, p.offloads, traffic, datapath=p.datapath) for p in profiles]
    sink = ListSink()
    Runner(sink, "itest", RunSettings(1), show_progress=False).execute(cases)
    assert our_namespaces() == []
    assert forwarders_running() == []
    return {case.profile.name: sample for case, sample in sink.samples}


@pytest.mark.parametrize("scenario, b_label", [("vm2vm", "tap:ofl-tb"), ("vm2host", "packet:ofl-hm")])
def test_engine_gro_through_the_forwarder(scenario, b_label):
    samples = run_cases(scenario, [PROFILES["engine-gro"], DIRECT])
    sample = samples["engine-gro"]
    assert sample.throughput_bps > 0
    assert sample.roles["forwarder"] == 1
    assert sample.counters["fwd:a>b:rx_packets"] > 0
    assert sample.counters["fwd:a>b:merged_super_packets"] > 0
    assert sample.counters["fwd:a>b:merged_packets"] > sample.counters["fwd:a>b:merged_super_packets"]
    assert not any(k.startswith("fwd:") and ":drop." in k for k in sample.counters)
    assert sample.datapath["fwd"]["mode.gro"].on and sample.datapath["fwd"]["mode.gro"].requested
    assert sample.datapath[b_label]["tso4"].on and not sample.datapath["tap:ofl-ta"]["tso4"].on
    direct = samples["veth-direct"]
    assert direct.throughput_bps > 0 and "forwarder" not in direct.roles
    assert direct.datapath["fwd"]["veth.direct"].on
    assert not any(k.startswith("fwd:") for k in direct.counters)


def test_engine_gso_segments_the_vms_super_packets():
    samples = run_cases("vm2host", [PROFILES["engine-gso"]])
    sample = samples["engine-gso"]
    assert sample.throughput_bps > 0
    assert sample.counters["fwd:a>b:segmented_super_packets"] > 0
    assert sample.counters["fwd:a>b:segments"] > sample.counters["fwd:a>b:segmented_super_packets"]
    assert sample.offloads["tx:ofl-ta"]["tcp-segmentation-offload"].on


def test_vxlan_super_packets_cross_the_forwarder_whole():
    """On a tunnelled path the TAPs that take TSO also take UDP-tunnel segmentation, so
    the VM's VXLAN super-packets reach offlab-fwd whole: engine GSO cuts them, and TSO
    pass-through carries them to the other VM uncut."""
    samples = run_cases("vm2vm-vxlan", [PROFILES["engine-gso"], PROFILES["tso-pass"]])
    gso = samples["engine-gso"]
    assert gso.throughput_bps > 0
    assert gso.datapath["tap:ofl-ta"]["udptnl-csum"].on
    assert gso.datapath["tap:ofl-ta"]["udptnl-csum"].requested
    assert not gso.datapath["tap:ofl-tb"]["udptnl"].on  # MTU-only egress: no tunnel GSO
    assert gso.counters["fwd:a>b:segmented_super_packets"] > 0
    assert gso.counters["fwd:a>b:segments"] > gso.counters["fwd:a>b:segmented_super_packets"]
    passed = samples["tso-pass"]
    assert passed.throughput_bps > 0
    assert all(passed.datapath[t]["udptnl"].on for t in ("tap:ofl-ta", "tap:ofl-tb"))
    assert not any(k.startswith("fwd:") and ":drop." in k for k in passed.counters)
    assert not any("CsumErrors" in k for k in passed.counters)
