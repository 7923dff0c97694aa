"""Latency parsers on recorded output (irtt 0.9.0 JSON, sockperf 3.7 ping-pong), the
percentile rule, and the command lines."""

import gzip
import json
from pathlib import Path

import pytest

from offlab.latency import (LatencyError, irtt_client_args, parse_irtt, parse_sockperf, percentile,
                            sockperf_client_args)

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
    assert latency.samples == 50 and latency.lost == 0
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


def test_sockperf_without_full_rtt_is_refused():
    with pytest.raises(LatencyError, match="--full-rtt"):
        parse_sockperf((FIXTURES / "sockperf-pp-udp.txt").read_text())


def test_command_lines():
    assert irtt_client_args("10.0.0.2", 3.0, "/tmp/x.json") == [
        "irtt", "client", "-Q", "-i", "10ms", "-d", "3s", "-o", "/tmp/x.json", "10.0.0.2:2112"]
    args = sockperf_client_args("10.0.0.2", 1, 2.5)
    assert args[:3] == ["taskset", "-c", "1"] and "--full-rtt" in args and "--tcp" in args
