"""iperf3 command lines and the JSON parser, on output recorded on this machine
(client JSON with the server's embedded: 0.5 s warm-up + 1.5 s measured)."""

import json
from pathlib import Path

import pytest

from offlab.records import TrafficSpec
from offlab.measure.traffic import (IperfError, client_args, listening_ports, parse_result,
                                    sockets_to_port, report_interval, server_args, whole_seconds)

FIXTURES = Path(__file__).parent / "fixtures"
WARMUP = 0.5


def recorded(name: str) -> str:
    return (FIXTURES / f"iperf3-{name}.json").read_text()


def measured_server_bytes(text: str) -> tuple[int, float]:
    server = json.loads(text)["server_output_json"]
    kept = [i["sum"] for i in server["intervals"] if i["sum"]["start"] >= WARMUP - 0.05]
    return sum(i["bytes"] for i in kept), sum(i["seconds"] for i in kept)


def test_tcp_throughput_excludes_warmup_intervals():
    text = recorded("tcp")
    result = parse_result(text, WARMUP)
    got, seconds = measured_server_bytes(text)
    assert result.throughput_bps == pytest.approx(8 * got / seconds)
    assert result.window_s == pytest.approx(1.5, abs=0.05)
    whole = json.loads(text)["server_output_json"]["end"]["sum_received"]
    assert got < whole["bytes"]  # the warm-up bytes are not counted
    assert result.retransmits is not None and result.retransmits >= 0
    assert result.lost_packets is None and result.sender_bps > 0


@pytest.mark.parametrize("name", ["udp1472", "udp18"])
def test_udp_loss_is_the_receivers_over_the_window(name):
    text = recorded(name)
    result = parse_result(text, WARMUP)
    server = json.loads(text)["server_output_json"]
    kept = [i["sum"] for i in server["intervals"] if i["sum"]["start"] >= WARMUP - 0.05]
    assert result.lost_packets == sum(i["lost_packets"] for i in kept)
    assert result.total_packets == sum(i["packets"] for i in kept)
    assert result.retransmits is None
    assert 0 < result.throughput_bps <= result.sender_bps
    # The buffers the kernel granted each side are kept (these fixtures ran without -w).
    assert result.counters["receiver_rcvbuf_bytes"] == server["start"]["rcvbuf_actual"] == 212992


def test_warmup_of_zero_keeps_everything():
    text = recorded("tcp")
    server = json.loads(text)["server_output_json"]
    total = sum(i["sum"]["bytes"] for i in server["intervals"])
    seconds = sum(i["sum"]["seconds"] for i in server["intervals"])
    assert parse_result(text, 0.0).throughput_bps == pytest.approx(8 * total / seconds)


def test_reported_error_is_raised():
    with pytest.raises(IperfError, match="unable to connect"):
        parse_result(json.dumps({"start": {}, "intervals": [], "end": {},
                                 "error": "unable to connect to server: Connection refused"}), 0.5)


def test_missing_server_output_and_bad_json():
    doc = json.loads(recorded("tcp"))
    del doc["server_output_json"]
    with pytest.raises(IperfError, match="get-server-output"):
        parse_result(json.dumps(doc), WARMUP)
    with pytest.raises(IperfError, match="not JSON"):
        parse_result("iperf3: error", WARMUP)


def test_warmup_longer_than_the_test_is_an_error():
    with pytest.raises(IperfError, match="no interval after"):
        parse_result(recorded("tcp"), 5.0)


def test_client_command_line():
    tcp = client_args(TrafficSpec("tcp", 1.5, 0.5), "10.201.0.2", core=0)
    assert tcp[:2] == ["iperf3", "-c"] and "--get-server-output" in tcp and "-J" in tcp
    assert tcp[tcp.index("-t") + 1] == "2" and tcp[tcp.index("-i") + 1] == "0.5"
    assert tcp[tcp.index("-A") + 1] == "0" and "-u" not in tcp
    udp = client_args(TrafficSpec("udp", 10, 2, udp_payload=18), "10.202.0.2", core=0)
    assert udp[udp.index("-u"):] == ["-u", "-b", "0", "-l", "18", "-w", str(4 * 1024 * 1024)]
    assert udp[udp.index("-i") + 1] == "1"
    with pytest.raises(ValueError, match="whole number"):
        client_args(TrafficSpec("tcp", 1.2, 0.5), "10.201.0.2", core=0)


def test_server_command_line_pins_and_reports_finely():
    args = server_args("10.201.0.2", core=1)
    assert args[args.index("-A") + 1] == "1" and args[args.index("-i") + 1] == "0.1"


def test_interval_and_whole_seconds():
    assert report_interval(0.5) == 0.5 and report_interval(2.0) == 1.0 and report_interval(0.3) == 0.1
    with pytest.raises(ValueError):
        report_interval(0.05)
    assert whole_seconds(2.0) == 2
    with pytest.raises(ValueError):
        whole_seconds(1.5)


def test_listening_ports_from_proc_net_tcp():
    table = (
        "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid\n"
        "   0: 0201C90A:1451 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0\n"
        "   1: 0201C90A:1451 0101C90A:D2F0 01 00000000:00000000 00:00000000 00000000 0\n"
        "   2: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0\n"
    )
    assert listening_ports(table) == {5201, 22}


def test_sockets_to_port_counts_control_and_data_connections():
    tcp = (
        "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid\n"
        "   0: 0100C90A:D2F0 0200C90A:1451 01 00000000:00000000 00:00000000 00000000 0\n"
        "   1: 0100C90A:D2F2 0200C90A:1451 01 00000000:00000000 00:00000000 00000000 0\n"
        "   2: 0100C90A:D2F4 0200C90A:1451 06 00000000:00000000 00:00000000 00000000 0\n"
        "   3: 0100C90A:D2F6 0200C90A:0016 01 00000000:00000000 00:00000000 00000000 0\n"
    )
    assert sockets_to_port(tcp, 5201, "01") == 2   # TIME_WAIT and port 22 not counted
    assert sockets_to_port(tcp, 5201, None) == 3
