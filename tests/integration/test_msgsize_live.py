"""A two-point message-size sweep, uni- and bidirectional, in real namespaces; and one
DUT-layout sample whose steering is checked in /sys."""

import subprocess

import pytest

from offlab.plan import parse
from offlab.report.curves import curve_sets
from offlab.report.model import build_rows
from offlab.records import RunInfo
from offlab.runner import Runner
from offlab.store import RunResults
from offlab.topology import build, our_namespaces

SWEEP = """
name = "two-point"
runs = 1
duration = 0.5
warmup = 0.5
scenarios = ["bare"]
mtus = [1500]
traffic = ["tcp"]
message_sizes = [1024, 65536]
bidirectional = [false, true]
sequences = ["all-on"]
"""


class ListSink:
    def __init__(self):
        self.samples = []

    def add_sample(self, run_id, case, sample):
        self.samples.append((case, sample))


def test_two_point_sweep_measures_every_size_and_direction():
    plan = parse(SWEEP, "two-point.toml")
    sink = ListSink()
    Runner(sink, "itest", runs=plan.runs, show_progress=False).execute(plan.cases)
    assert our_namespaces() == []
    got = {case.traffic.label: sample for case, sample in sink.samples}
    assert set(got) == {"tcp-m1024", "tcp-m1024-bidir", "tcp-m65536", "tcp-m65536-bidir"}
    for label, sample in got.items():
        assert sample.throughput_bps > 0
        if label.endswith("bidir"):
            forward, reverse = sample.counters["forward_bps"], sample.counters["reverse_bps"]
            assert forward > 0 and reverse > 0
            assert forward + reverse == pytest.approx(sample.throughput_bps)
        else:
            assert "reverse_bps" not in sample.counters
    info = RunInfo("itest", "two-point", 0.0, "", "", "", 2)
    results = RunResults(info, "complete", plan.cases,
                         {c.key: (s,) for c, s in sink.samples}, None)
    (curves,) = curve_sets(build_rows(results).values())
    assert [p.sizes for p in curves.panels] == [(1024, 65536), (1024, 65536)]


def rps_mask(namespace: str, device: str) -> int:
    text = subprocess.run(["ip", "netns", "exec", namespace, "cat",
                           f"/sys/class/net/{device}/queues/rx-0/rps_cpus"],
                          capture_output=True, text=True, check=True).stdout
    return int(text.strip().replace(",", ""), 16)


@pytest.mark.parametrize("direction, dut_device, generator_device", [
    ("rcv", "ofl-v1", "ofl-v0"), ("snd", "ofl-v0", "ofl-v1")])
def test_dut_layout_steers_the_duts_receive_path_to_the_softirq_core(
        direction, dut_device, generator_device):
    with build(f"vxlan-dut-{direction}", 1500) as topo:
        dut_ns = topo.receiver.namespace if direction == "rcv" else topo.sender.namespace
        generator_ns = topo.sender.namespace if direction == "rcv" else topo.receiver.namespace
        assert rps_mask(dut_ns, dut_device) == 1 << topo.softirq_core
        assert rps_mask(generator_ns, generator_device) == 1 << topo.app_core
        assert topo.sender.core == topo.receiver.core == topo.app_core
    assert our_namespaces() == []
