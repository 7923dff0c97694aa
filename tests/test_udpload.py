"""offlab-udpload's command lines and the parser of its two reports (pure)."""

import json

import pytest

from offlab.measure import udpload
from offlab.records import TrafficSpec

GSO = TrafficSpec("udp", 1.5, 0.5, udp_payload=1472, generator="udpload", udp_gso=True, rate_bps=2e9)
SENT = {"role": "send", "gso": True, "payload": 1472, "offered_bps": 2e9, "sent": 300_000,
        "sent_measured": 250_000, "bytes_measured": 250_000 * 1472, "measured_s": 1.5, "send_calls": 6000,
        "send_errors": 2, "segments_per_send": 44, "sndbuf": 8388608}
GOT = {"role": "recv", "gro": True, "received": 299_000, "received_measured": 249_000,
       "bytes_measured": 249_000 * 1472, "reads": 7000, "read_calls": 700, "coalesced_reads": 6500, "refused_short": 0,
       "refused_foreign": 0, "rcvbuf": 8388608}


def test_command_lines_ask_for_segmentation_coalescing_and_tuned_buffers():
    sender = udpload.sender_args(udpload.WORKSPACE_BINARY, "10.0.0.2", 0, GSO)
    assert sender[:3] == ["taskset", "-c", "0"] and sender[4] == "send" and sender[-1] == "--gso"
    assert sender[sender.index("--rate") + 1] == "2000000000" and "--sndbuf" in sender
    receiver = udpload.receiver_args(udpload.WORKSPACE_BINARY, "10.0.0.2", 1, GSO)
    assert receiver[-1] == "--gro" and f"10.0.0.2:{udpload.PORT}" in receiver
    plain = TrafficSpec("udp", 1.5, 0.5, udp_payload=1472, generator="udpload")
    assert "--gso" not in udpload.sender_args(udpload.WORKSPACE_BINARY, "10.0.0.2", 0, plain)
    assert plain.label == "udp1472-plain" and GSO.label == "udp1472-gso-2G"


def test_reports_give_the_windows_rates_loss_and_batching():
    result = udpload.parse(json.dumps(SENT), json.dumps(GOT))
    assert result.lost_packets == 1000 and result.total_packets == 250_000
    assert result.throughput_bps == pytest.approx(8 * 249_000 * 1472 / 1.5)
    assert result.loss_percent == pytest.approx(0.4)
    c = result.counters
    assert c["udpload_segments_per_send"] == 44 and c["udpload_datagrams_per_read"] == pytest.approx(299_000 / 7000)
    assert c["receiver_rcvbuf_bytes"] == 8388608 and c["udpload_reads_per_call"] == 10.0


@pytest.mark.parametrize("sent, got, complaint", [
    ("not json", json.dumps(GOT), "not JSON"),
    (json.dumps(GOT), json.dumps(SENT), "not a sender's and a receiver's"),
    (json.dumps({**SENT, "sent_measured": 0}), json.dumps(GOT), "sent nothing"),
])
def test_bad_reports_are_one_clear_error(sent, got, complaint):
    with pytest.raises(udpload.UdpLoadError, match=complaint):
        udpload.parse(sent, got)


def test_a_named_binary_must_exist(monkeypatch, tmp_path):
    monkeypatch.setenv(udpload.BINARY_ENV, str(tmp_path / "nope"))
    with pytest.raises(udpload.UdpLoadError, match="not an executable"):
        udpload.find_binary()
