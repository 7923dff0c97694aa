"""The middlebox in real namespaces: R forwards A→B traffic in its kernel, terminates
R→A traffic itself, and every sample carries the counter deltas of A, R and B; the
adaptive rule stops between its bounds and stores its outcome. With R as offlab-fwd
the forwarder bridges R's veths and its counters and state are in every sample."""

import os
from pathlib import Path

import pytest

from offlab.run import plan
from offlab.topology.fwd import FwdError, find_binary
from offlab.records import Params, RunSettings
from offlab.run.runner import Runner
from offlab.store.store import Store
from offlab.topology import build, our_namespaces
from offlab.topology.middlebox import AR_R, RB_R

PLAN = """
name = "mb-live"
runs = 1
duration = 1.0
warmup = 1.0
scenarios = ["middlebox"]
paths = ["{path}"]
matrix = ["checksum"]
mtus = [1500]
traffic = ["tcp"]
"""


def _cases(path: str):
    return plan.parse(PLAN.format(path=path), "live.toml").cases


def _begin(store: Store, run_id: str) -> None:
    from offlab.records import RunInfo
    store.begin_run(RunInfo(run_id, "mb-live", 0.0, "test", "k", "cpu", 2))


def test_router_forwards_and_only_its_interfaces_follow_the_profile():
    with build("middlebox", 1500, Params(path="a-b", router="kernel")) as topo:
        r = topo.hosts["r"]
        assert r.run(["sysctl", "-n", "net.ipv4.ip_forward"]).stdout.strip() == "1"
        assert [i.device for i in topo.offload_interfaces()] == [AR_R, RB_R]
        assert {i.host for i in topo.offload_interfaces()} == {r}
        assert topo.sender.address == "10.203.1.1" and topo.receiver.address == "10.203.2.2"
        assert topo.roles == {"sender": 0, "receiver": 1, "forwarder": 0}
    assert our_namespaces() == []


def test_forwarded_sample_records_counter_deltas_of_every_node(tmp_path):
    with Store(tmp_path / "s.sqlite") as store:
        _begin(store, "fwd")
        cases = _cases("a-b")[:1]  # chkY: all on
        Runner(store, "fwd", RunSettings(1), show_progress=False).execute(cases)
        (sample,) = store.load_run("fwd").samples[cases[0].key]
    counters = sample.counters
    # R forwarded the data: it came in on ofl-ar1 and left on ofl-rb0.
    assert counters["r:Ip.ForwDatagrams"] > 1000
    assert counters[f"r:dev.{AR_R}.rx_packets"] > 1000
    assert counters[f"r:dev.{RB_R}.tx_packets"] > 1000
    # A sent, B received, each in its own namespace's counters.
    assert counters["a:Tcp.OutSegs"] > 1000 and counters["b:Tcp.InSegs"] > 1000
    assert "r:Tcp.InSegs" not in counters  # nothing ended on R
    assert sample.throughput_bps > 0
    assert set(sample.offloads) == {f"router:{AR_R}", f"router:{RB_R}"}


def test_terminated_path_ends_on_the_router_and_adaptive_outcome_is_stored(tmp_path):
    rule = RunSettings(99, ci_target=0.001, min_runs=2, max_runs=3)  # too tight to reach: runs to 3
    with Store(tmp_path / "s.sqlite") as store:
        _begin(store, "term")
        cases = _cases("r-a")[:1]
        stats = Runner(store, "term", rule, show_progress=False).execute(cases)
        results = store.load_run("term")
    samples = results.samples[cases[0].key]
    assert 2 <= len(samples) <= 3 and stats.samples == len(samples)
    outcome = results.adaptive[cases[0].key]
    assert outcome.runs == len(samples) and outcome.max_runs == 3
    assert outcome.reached == (outcome.half_width is not None and outcome.half_width <= 0.001)
    counters = samples[0].counters
    assert counters["r:Tcp.OutSegs"] > 1000 and counters["a:Tcp.InSegs"] > 1000
    assert counters.get("r:Ip.ForwDatagrams", 0) == 0


# --- R as offlab-fwd ----------------------------------------------------------------

def _fwd_missing() -> str | None:
    try:
        find_binary()
    except FwdError as missing:
        return str(missing)
    return None


FWD_PLAN = PLAN.replace('paths = ["{path}"]', 'paths = ["a-b"]\nrouter = ["offlab-fwd"]')


def _our_forwarders() -> set[int]:
    """offlab-fwd processes this test process started (others may run their own)."""
    found = set()
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":\t", 1) for line in status.read_text().splitlines() if ":\t" in line)
        except OSError:
            continue  # exited while we looked
        if fields.get("Name") == "offlab-fwd" and int(fields.get("PPid", "0")) == os.getpid():
            found.add(int(status.parent.name))
    return found


@pytest.mark.skipif(_fwd_missing() is not None, reason=str(_fwd_missing()))
def test_offlab_fwd_as_router_forwards_tcp_and_its_counters_are_in_the_sample(tmp_path):
    cases = plan.parse(FWD_PLAN, "live.toml").cases  # chkY (mode gro), chkN (mode csum)
    assert [c.label for c in cases] == ["middlebox-fwd-ab"] * 2
    with build("middlebox", 1500, Params(path="a-b", router="offlab-fwd")) as topo:
        r = topo.hosts["r"]
        assert r.run(["sysctl", "-n", "net.ipv4.ip_forward"]).stdout.strip() == "0"
        for device in (AR_R, RB_R):  # no address: R is no IP hop, A and B share a segment
            assert r.run(["ip", "-o", "-4", "addr", "show", "dev", device]).stdout == ""
        assert topo.sender.address == "10.204.0.1" and topo.receiver.address == "10.204.0.2"
    with Store(tmp_path / "s.sqlite") as store:
        _begin(store, "fwd")
        Runner(store, "fwd", RunSettings(1), show_progress=False).execute(cases)
        samples = store.load_run("fwd").samples
    on, off = (samples[c.key][0] for c in cases)
    for sample in (on, off):
        assert sample.throughput_bps > 0
        c = sample.counters
        # The data went A → R's ofl-ar1 → offlab-fwd → R's ofl-rb0 → B, not via R's IP.
        assert c["fwd:a>b:rx_packets"] > 100 and c["fwd:a>b:tx_bytes"] > 10**6
        assert c["fwd:b>a:rx_packets"] > 100  # the ACKs came back through it
        assert c.get("r:Ip.ForwDatagrams", 0) == 0
        assert c.get("b:Tcp.InCsumErrors", 0) == 0 and c["b:Tcp.InSegs"] > 100
        assert {"fwd", f"packet:{AR_R}", f"packet:{RB_R}"} == set(sample.datapath)
        assert set(sample.offloads) == {f"router:{AR_R}", f"router:{RB_R}"}
    assert on.datapath["fwd"]["mode.gro"].on and off.datapath["fwd"]["mode.csum"].on
    assert off.datapath[f"packet:{RB_R}"]["csum"].on is False
    # chk N: the forwarder completed the checksums itself.
    assert off.counters["fwd:a>b:checksums_completed"] > 100
    assert "fwd:a>b:checksums_completed" not in on.counters
    assert our_namespaces() == [] and _our_forwarders() == set()
