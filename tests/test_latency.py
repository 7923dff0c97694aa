"""Latency parsers on recorded output (irtt 0.9.0 JSON, sockperf 3.7 ping-pong), the
percentile rule, and the command lines."""

import gzip
import json
from pathlib import Path

import pytest

from offlab.measure import rtthist
from offlab.measure.latency import (LatencyError, irtt_client_args, irtt_server_args, parse_irtt,
                                    parse_sockperf, parse_sockperf_log, percentile, sockperf_client_args,
                                    sockperf_server_args)

FIXTURES = Path(__file__).parent / "fixtures"


def test_nearest_rank_percentiles():
    values = list(range(1, 101))
    assert percentile(values, 50) == 50 and percentile(values, 99) == 99
    assert percentile(values, 99.9) == 100 and percentile([7.0], 99.9) == 7.0
    with pytest.raises(LatencyError):
        percentile([], 50)


def test_irtt_recorded_run_gives_percentiles_in_microseconds():
    text = gzip.decompress((FIXTURES / "irtt-client-1s.json.gz").read_bytes()).decode()
    latency = parse_irtt(text)
    doc = json.loads(text)
    rtts = sorted(t["delay"]["rtt"] / 1000 for t in doc["round_trips"])
    assert latency.samples == 50 and latency.lost == 0 and sum(latency.histogram.values()) == 50
    assert latency.p50_us == rtts[24]  # nearest rank of 50 % of 50
    assert latency.p999_us == rtts[-1] and latency.p50_us <= latency.p99_us <= latency.p999_us
    assert abs(latency.p50_us - doc["stats"]["rtt"]["median"] / 1000) < 20


def test_irtt_lost_probes_are_counted_not_timed():
    text = gzip.decompress((FIXTURES / "irtt-client-1s.json.gz").read_bytes()).decode()
    doc = json.loads(text)
    for trip in doc["round_trips"][:5]:
        trip["lost"] = "true"
        del trip["delay"]["rtt"]
    latency = parse_irtt(json.dumps(doc))
    assert (latency.samples, latency.lost) == (45, 5)


@pytest.mark.parametrize("text, complaint", [
    ("not json", "not JSON"), ("{}", "no round_trips"),
    ('{"round_trips": [{"lost": "true", "delay": {}}]}', "none of 1 probes"),
])
def test_irtt_bad_output_is_a_typed_error(text, complaint):
    with pytest.raises(LatencyError, match=complaint):
        parse_irtt(text)


def test_sockperf_full_rtt_recorded_output():
    latency = parse_sockperf((FIXTURES / "sockperf-pp-tcp-full-rtt.txt").read_text())
    assert latency.p999_us == 66.875 and latency.p50_us < latency.p99_us < latency.p999_us
    assert latency.samples > 1000 and latency.lost == 0
    assert latency.seconds is not None and 0 < latency.seconds < 3  # sockperf's valid duration


def test_sockperf_without_full_rtt_is_refused():
    with pytest.raises(LatencyError, match="--full-rtt"):
        parse_sockperf((FIXTURES / "sockperf-pp-udp.txt").read_text())


def test_irtt_probes_sent_outside_the_measured_window_are_dropped():
    """Issue 37: irtt ran through the warm-up and every round trip counted. Only probes
    the client sent inside the window count, by their send timestamps."""
    text = gzip.decompress((FIXTURES / "irtt-client-1s.json.gz").read_bytes()).decode()
    doc = json.loads(text)
    sent = [t["timestamps"]["client"]["send"]["wall"] / 1e9 for t in doc["round_trips"]]
    for slow in doc["round_trips"][:10]:  # the warm-up's probes: slow, and outside
        slow["delay"]["rtt"] = 50_000_000
    window = (sent[10], sent[-1])
    latency = parse_irtt(json.dumps(doc), window)
    assert latency.samples == 40 and latency.outside == 10 and latency.p999_us < 50_000
    assert latency.counters("rtt")["rtt_outside"] == 10.0
    assert parse_irtt(json.dumps(doc)).p999_us == 50_000  # without the window they counted
    with pytest.raises(LatencyError, match="none of 0 probes sent in the measured window"):
        parse_irtt(json.dumps(doc), (0.0, 1.0))


def test_command_lines():
    # irtt pinned to its role's core: the client with the sender, the server with the receiver.
    assert irtt_client_args("10.0.0.2", 0, 3.0, "/tmp/x.json") == [
        "taskset", "-c", "0", "irtt", "client", "-Q", "-i", "2ms", "-d", "3s", "-o", "/tmp/x.json",
        "10.0.0.2:2112"]
    assert irtt_server_args("10.0.0.2", 1)[:3] == ["taskset", "-c", "1"]
    assert irtt_server_args("10.0.0.2", 1)[-2:] == ["-i", "1ms"]  # lets a 2 ms client in
    assert "--mps=500" in sockperf_client_args("10.0.0.2", 1, 2.0, rate=500)
    args = sockperf_client_args("10.0.0.2", 1, 2.5)
    assert args[:3] == ["taskset", "-c", "1"] and "--full-rtt" in args and "--tcp" in args
    udp = sockperf_client_args("10.0.0.2", 1, 2.5, protocol="udp", full_log="/tmp/l.csv")
    assert "--tcp" not in udp and udp[-2:] == ["--full-log", "/tmp/l.csv"]
    assert "--tcp" not in sockperf_server_args("10.0.0.2", 0, protocol="udp")


def test_sockperf_full_log_becomes_a_histogram_of_every_round_trip():
    text = ("packet, txTime(sec), rxTime(sec), rtt(usec)\n0, 2.427945275, 2.428033958, 88.683\n"
            "1, 2.428034076, 2.428078703, 44.627\n2, 2.4, 2.5, 44.9\n")
    hist = parse_sockperf_log(text)
    assert sum(hist.values()) == 3 and rtthist.percentile(hist, 50.0) == pytest.approx(44.7, rel=0.03)
    with pytest.raises(LatencyError):
        parse_sockperf_log("packet, txTime(sec), rxTime(sec), rtt(usec)\n")


def test_a_paced_stream_gets_the_request_response_probe_when_its_window_holds_one():
    """Issue 37: no latency at a fixed, paced load. With latency_probe, the service-demand
    (paced) streams carry a paced TCP request/response probe once their window holds
    sockperf's whole second (every paced window does: at least 5 s); the saturating stream keeps irtt."""
    from offlab.measure import latency_probes
    from offlab.run import plan
    from offlab.records import TrafficSpec as Spec
    base = ('name = "t"\nruns = 3\nduration = 1.5\nwarmup = 0.5\nscenarios = ["bare"]\nmtus = [1500]\n'
            'sequences = ["tx"]\nlatency_probe = true\ntraffic = ["tcp"]\n[service_demand]\npercent = 80\n')
    long = plan.parse(base + "duration = 5.7\nwarmup = 0.3\n", "t.toml")
    paced = [c for c in long.cases if c.traffic.service_demand]
    assert paced and all(c.traffic.latency_probe for c in paced)
    assert isinstance(latency_probes.for_stream(None, paced[0].traffic), latency_probes.PacedRequestResponse)
    assert isinstance(latency_probes.for_stream(None, Spec("tcp", 1.5, latency_probe=True)), latency_probes.Irtt)
    assert latency_probes.inside_seconds(4.7) == 4 and latency_probes.inside_seconds(1.25) == 1
