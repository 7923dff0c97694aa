"""Kernel counter parsing on output recorded in a namespace of this machine."""

from pathlib import Path

from offlab import counters

FIXTURE = Path(__file__).parent / "fixtures" / "counters" / "netns_snmp_netstat_dev.txt"


def test_parses_every_section_of_recorded_output():
    parsed = counters.parse_all(FIXTURE.read_text())
    assert parsed["Ip.DefaultTTL"] == 64
    assert parsed["Ip.Forwarding"] == 2
    assert "Tcp.RetransSegs" in parsed and "Udp.InCsumErrors" in parsed
    assert "TcpExt.TCPLostRetransmit" in parsed
    assert parsed["dev.lo.rx_bytes"] == 0 and "dev.lo.tx_carrier" in parsed
    assert not any(k.startswith(("Inter", "dev.face")) for k in parsed)


def test_header_and_value_lines_must_agree():
    lines = ["Tcp: A B C", "Tcp: 1 2", "Udp: X Y", "Udp: 7 8", "Ip: Q", "Icmp: 5"]
    assert counters.parse_snmp(lines) == {"Udp.X": 7, "Udp.Y": 8}


def test_negative_values_are_kept():
    assert counters.parse_snmp(["Tcp: MaxConn", "Tcp: -1"]) == {"Tcp.MaxConn": -1}


def test_dev_line_with_wrong_column_count_is_skipped():
    lines = ["  ofl-v0: 10 2 0 0 0 0 0 0 30 4 0 0 0 0 0 0", "  bad: 1 2 3"]
    parsed = counters.parse_dev(lines)
    assert parsed["dev.ofl-v0.rx_bytes"] == 10 and parsed["dev.ofl-v0.tx_packets"] == 4
    assert not any(k.startswith("dev.bad") for k in parsed)


def test_delta_keeps_only_growth_and_restarts_reset_counters():
    before = {"Tcp.RetransSegs": 5, "dev.x.rx_drop": 9, "Ip.InReceives": 1}
    after = {"Tcp.RetransSegs": 8, "dev.x.rx_drop": 2, "Ip.InReceives": 1, "new": 4}
    assert counters.delta(before, after) == {"Tcp.RetransSegs": 3, "dev.x.rx_drop": 2, "new": 4}


def test_pathology_names():
    assert counters.is_pathology("Udp.InCsumErrors")
    assert counters.is_pathology("dev.ofl-r0.rx_drop")
    assert counters.is_pathology("TcpExt.TCPLostRetransmit")
    assert not counters.is_pathology("dev.ofl-r0.rx_bytes")
    assert not counters.is_pathology("Ip.InReceives")


def test_snapshot_uses_one_command_per_host():
    from tests.fixtures.recording_host import RecordingHost

    host = RecordingHost("r", lambda args: FIXTURE.read_text())
    snap = counters.snapshot_many({"r": host})
    assert host.calls == [["cat", *counters.PROC_FILES]]
    assert snap["r:Ip.DefaultTTL"] == 64


def test_ethtool_statistics_are_nic_counters():
    text = "NIC statistics:\n     rx_packets: 120\n     rx_dropped: 3\n     tx_queue_0_bytes: 99\n  bogus line\n"
    found = counters.parse_ethtool_stats("ens1f0", text)
    assert found == {"nic.ens1f0.rx_packets": 120, "nic.ens1f0.rx_dropped": 3, "nic.ens1f0.tx_queue_0_bytes": 99}
    assert counters.is_pathology("nic.ens1f0.rx_dropped") and not counters.is_pathology("nic.ens1f0.rx_packets")
