"""The middlebox in real namespaces: R forwards A→B traffic in its kernel, terminates
R→A traffic itself, and every sample carries the counter deltas of A, R and B; the
adaptive rule stops between its bounds and stores its outcome."""

from offlab import plan
from offlab.adaptive import Adaptive
from offlab.proc import in_netns, run
from offlab.runner import Runner
from offlab.store import Store
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
    with build("middlebox-ab", 1500) as topo:
        r = topo.ns["r"]
        forwarding = run(in_netns(r, ["sysctl", "-n", "net.ipv4.ip_forward"])).stdout.strip()
        assert forwarding == "1"
        assert [i.device for i in topo.offload_interfaces()] == [AR_R, RB_R]
        assert {i.namespace for i in topo.offload_interfaces()} == {r}
        assert topo.sender.address == "10.203.1.1" and topo.receiver.address == "10.203.2.2"
        assert topo.roles == {"sender": 0, "receiver": 1, "forwarder": 0}
    assert our_namespaces() == []


def test_forwarded_sample_records_counter_deltas_of_every_node(tmp_path):
    with Store(tmp_path / "s.sqlite") as store:
        _begin(store, "fwd")
        cases = _cases("a-b")[:1]  # chkY: all on
        Runner(store, "fwd", 1, show_progress=False).execute(cases)
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
    rule = Adaptive(target=0.001, min_runs=2, max_runs=3)  # too tight to reach: runs to 3
    with Store(tmp_path / "s.sqlite") as store:
        _begin(store, "term")
        cases = _cases("r-a")[:1]
        stats = Runner(store, "term", 99, show_progress=False, adaptive=rule).execute(cases)
        results = store.load_run("term")
    samples = results.samples[cases[0].key]
    assert 2 <= len(samples) <= 3 and stats.samples == len(samples)
    outcome = results.adaptive[cases[0].key]
    assert outcome.runs == len(samples) and outcome.max_runs == 3
    assert outcome.reached == (outcome.half_width is not None and outcome.half_width <= 0.001)
    counters = samples[0].counters
    assert counters["r:Tcp.OutSegs"] > 1000 and counters["a:Tcp.InSegs"] > 1000
    assert counters.get("r:Ip.ForwDatagrams", 0) == 0
