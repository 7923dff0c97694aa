"""Latency parsers on recorded output (irtt 0.9.0 JSON, sockperf 3.7 ping-pong), the
percentile rule, and the command lines."""

import gzip
import json
from pathlib import Path

import pytest

from offlab import rtthist
from offlab.latency import (LatencyError, irtt_client_args, irtt_server_args, parse_irtt, parse_sockperf,
                            parse_sockperf_log, percentile, sockperf_client_args, sockperf_server_args)

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


def test_command_lines():
    assert irtt_client_args("10.0.0.2", 3.0, "/tmp/x.json") == [
        "irtt", "client", "-Q", "-i", "2ms", "-d", "3s", "-o", "/tmp/x.json", "10.0.0.2:2112"]
    assert irtt_server_args("10.0.0.2")[-2:] == ["-i", "1ms"]  # lets a 2 ms client in
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
