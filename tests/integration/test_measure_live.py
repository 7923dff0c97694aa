"""One short real TCP case, measured end to end."""

import pytest

from offlab.records import CaseSpec, RunSettings, TrafficSpec
from offlab.run.runner import Runner
from offlab.studies.offloads.plan import all_on
from offlab.topology import our_namespaces

from .runs import ListSink

pytestmark = pytest.mark.alone  # the measured window's length: a neighbour delays its end


def test_short_tcp_case_yields_a_complete_sample():
    case = CaseSpec("bare", 1500, all_on(), TrafficSpec("tcp", duration_s=0.5, warmup_s=0.5))
    sink = ListSink()
    Runner(sink, "itest", RunSettings(repetitions=1), show_progress=False).execute([case])
    assert our_namespaces() == []
    ((run_id, got_case, sample),) = sink.records
    assert run_id == "itest" and got_case == case and sample.case_key == case.key
    assert sample.throughput_bps > 0 and sample.sender_bps > 0
    assert sample.retransmits is not None and sample.lost_packets is None
    assert sample.duration_s == pytest.approx(0.5, abs=0.1)
    assert sample.roles == {"sender": 0, "receiver": 1}
    assert {c.core for c in sample.cpu} >= {0, 1}
    for share in sample.cpu:
        assert sum(share.percent.values()) == pytest.approx(100.0, abs=0.5)
    assert sample.role_share("sender").busy > 0
    assert sample.offloads["tx:ofl-v0"]["generic-receive-offload"].on
    assert sample.counters["cpu_window_s"] == pytest.approx(0.5, abs=0.1)
    assert sample.counters["iperf3_start_lag_s"] > 0  # the data connection was seen
    assert sample.counters["sender_app_sys_pct"] > 0
    assert "other_busy_pct" in sample.counters
    measured = [i for i in sample.intervals if not i.warmup]
    assert len([i for i in sample.intervals if i.warmup]) == 5 and len(measured) >= 5  # 0.1 s intervals
    assert all(i.bps > 0 for i in measured)


def test_a_sample_keeps_its_windows_segments_and_the_hosts_stack():
    """Issue #30: each machine's CPU window by its clock, iperf3's CPU figures beside it,
    the sender's segments and retransmit share, and each host's stack, from a real run."""
    case = CaseSpec("bare", 1500, all_on(), TrafficSpec("tcp", duration_s=0.5, warmup_s=0.5))
    sink = ListSink()
    Runner(sink, "itest", RunSettings(repetitions=1), show_progress=False).execute([case])
    ((_, _, sample),) = sink.records
    counters = sample.counters
    assert counters["cpu_window_nominal_s"] == 0.5
    assert counters["cpu_window_s.local"] == pytest.approx(0.5, abs=0.1)  # /proc/uptime, 10 ms steps
    assert 0 < counters["iperf3_cpu_sender_pct"] <= 100 * 2 and "iperf3_cpu_receiver_pct" in counters
    # the sender's segments from its own /proc/net/snmp: at least the bytes / the MSS
    assert counters["tcp_segments"] >= sample.throughput_bps * 0.5 / 8 / 1448 * 0.5
    assert 0 <= counters["tcp_retrans_pct"] < 100
    assert counters["tx:Tcp.OutSegs"] == counters["tcp_segments"]
    stacks = {host: config for _, host, config in sink.stacks}
    assert set(stacks) == {"tx", "rx"}
    assert stacks["tx"]["tool.iperf3"].startswith("iperf 3")
    assert stacks["rx"]["dev.ofl-v1.gro_max_size"].isdigit() and "net.ipv4.tcp_congestion_control" in stacks["rx"]
    assert "net.core.netdev_max_backlog" in stacks["rx"]  # the machine's, read outside the namespace
