"""Bidirectional iperf3 (--bidir) and message sizes (-l): command line and parser, on
output recorded on this machine (loopback, iperf3 3.12, `-t 2 -i 0.5 --bidir -l 1024`
against a `-s -J -i 0.1` server; 0.5 s warm-up)."""

import json
from pathlib import Path

import pytest

from offlab.records import TrafficSpec
from offlab.measure.traffic import IperfError, client_args, parse_result

FIXTURES = Path(__file__).parent / "fixtures"
WARMUP = 0.5


def recorded(name: str) -> str:
    return (FIXTURES / f"iperf3-{name}.json").read_text()


def rate(intervals: list[dict], key: str) -> float:
    kept = [i[key] for i in intervals if i[key]["start"] >= WARMUP - 0.05]
    return 8 * sum(i["bytes"] for i in kept) / sum(i["seconds"] for i in kept)


def test_bidirectional_throughput_is_both_directions_received():
    text = recorded("tcp-bidir")
    doc = json.loads(text)
    client, server = doc["intervals"], doc["server_output_json"]["intervals"]
    forward, reverse = rate(server, "sum"), rate(client, "sum_bidir_reverse")
    result = parse_result(text, WARMUP)
    assert result.throughput_bps == pytest.approx(forward + reverse)
    assert result.reverse is not None
    assert result.reverse.received_bps == pytest.approx(reverse)
    assert result.reverse.sent_bps == pytest.approx(rate(server, "sum_bidir_reverse"))
    assert result.sender_bps == pytest.approx(rate(client, "sum") + result.reverse.sent_bps)
    assert forward > 0 and reverse > 0


def test_bidirectional_counters_split_the_directions():
    result = parse_result(recorded("tcp-bidir"), WARMUP)
    counters = result.counters
    assert set(counters) == {"forward_bps", "forward_sender_bps", "reverse_bps",
                             "reverse_sender_bps"}
    assert counters["forward_bps"] + counters["reverse_bps"] == pytest.approx(result.throughput_bps)
    assert counters["forward_sender_bps"] + counters["reverse_sender_bps"] == pytest.approx(
        result.sender_bps)


def test_bidirectional_retransmits_add_both_senders():
    doc = json.loads(recorded("tcp-bidir"))
    client, server = doc["intervals"], doc["server_output_json"]["intervals"]
    expected = sum(i["sum"].get("retransmits", 0) for i in client if i["sum"]["start"] >= 0.45) \
        + sum(i["sum_bidir_reverse"].get("retransmits", 0) for i in server
              if i["sum_bidir_reverse"]["start"] >= 0.45)
    assert parse_result(recorded("tcp-bidir"), WARMUP).retransmits == expected


def test_unidirectional_result_has_no_reverse_half():
    result = parse_result(recorded("tcp"), WARMUP)
    assert result.reverse is None and result.counters == {}


def test_missing_reverse_intervals_are_a_typed_error():
    doc = json.loads(recorded("tcp-bidir"))
    for interval in doc["server_output_json"]["intervals"]:
        del interval["sum_bidir_reverse"]
    with pytest.raises(IperfError, match="server JSON has no 'sum_bidir_reverse' intervals"):
        parse_result(json.dumps(doc), WARMUP)


def test_client_args_carry_message_size_and_bidir():
    spec = TrafficSpec("tcp", 2.0, 1.0, message_size=65536, bidirectional=True)
    args = client_args(spec, "10.201.0.2", core=0)
    assert "--bidir" in args
    assert args[args.index("-l") + 1] == "65536"
    assert "-u" not in args
