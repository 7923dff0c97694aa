"""A two-point message-size sweep, uni- and bidirectional, in real namespaces; and one
DUT-layout sample whose steering is checked in /sys."""

import pytest

from offlab.run.plan import parse
from offlab.records import Params, RunInfo
from offlab.report.model import build_rows
from offlab.run.runner import Runner
from offlab.report.studies.msgsize import curve_sets
from offlab.store.store import RunResults
from offlab.topology import build, our_namespaces

from .runs import ListSink

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


def test_two_point_sweep_measures_every_size_and_direction():
    plan = parse(SWEEP, "two-point.toml")
    sink = ListSink()
    Runner(sink, "itest", plan.settings(), show_progress=False).execute(plan.cases)
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


def rps_mask(host, device: str) -> int:
    text = host.read_file(f"/sys/class/net/{device}/queues/rx-0/rps_cpus")
    return int(text.strip().replace(",", ""), 16)


@pytest.mark.parametrize("direction, dut_device, generator_device", [
    ("rcv", "ofl-v1", "ofl-v0"), ("snd", "ofl-v0", "ofl-v1")])
def test_dut_layout_steers_the_duts_receive_path_to_the_softirq_core(
        direction, dut_device, generator_device):
    with build("vxlan", 1500, Params(dut=direction)) as topo:
        dut = topo.receiver.host if direction == "rcv" else topo.sender.host
        generator = topo.sender.host if direction == "rcv" else topo.receiver.host
        assert rps_mask(dut, dut_device) == 1 << topo.dut.softirq_core
        assert rps_mask(generator, generator_device) == 1 << topo.dut.app_core
        assert topo.sender.core == topo.receiver.core == topo.dut.app_core
    assert our_namespaces() == []
