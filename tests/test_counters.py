"""Kernel counter parsing on output recorded in a namespace of this machine."""

import subprocess
from pathlib import Path

from offlab.measure import counters

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


def test_snapshot_reads_proc_and_qdiscs_per_host_and_softnet_once_per_machine():
    from tests.fixtures.recording_host import RecordingHost

    from tests.fixtures.recording_host import batched_reads

    def answer(args):
        if args[0] == "tc":
            return QDISCS
        return SOFTNET.read_text() if args == ["cat", counters.SOFTNET_FILE] else FIXTURE.read_text()

    tx, rx = RecordingHost("tx", answer), RecordingHost("rx", answer)
    snap = counters.snapshot_many({"tx": tx, "rx": rx})
    # one command per host and snapshot (one SSH round trip, not one per read)
    assert [batched_reads(call) for call in tx.calls] == [
        [["cat", *counters.PROC_FILES], ["tc", "-s", "-j", "qdisc", "show"], ["cat", counters.SOFTNET_FILE]]]
    # rx shares the machine (and so its softnet_stat) with tx: not read twice
    assert [batched_reads(call) for call in rx.calls] == [
        [["cat", *counters.PROC_FILES], ["tc", "-s", "-j", "qdisc", "show"]]]
    assert snap["tx:Ip.DefaultTTL"] == 64 and "tx:softnet.cpu1.squeezed" in snap
    assert not any(k.startswith("rx:softnet.") for k in snap)
    assert snap["rx:qdisc.ofl-v0.pfifo_fast.0:.drops"] == 17


def _one_read_each(nics: list[str]) -> dict[str, int]:
    """A snapshot as offlab took it before SNAPSHOT_SCRIPT: one command per file, qdisc
    list and NIC, each parsed on its own."""
    def read(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(args, capture_output=True, text=True, timeout=10)

    found = counters.parse_all(read("cat", *counters.PROC_FILES).stdout)
    qdiscs = read("tc", "-s", "-j", "qdisc", "show")
    if qdiscs.returncode == 0:
        found.update(counters.parse_tc_qdisc(qdiscs.stdout))
    found.update(counters.parse_softnet(Path(counters.SOFTNET_FILE).read_text()))
    for device in nics:
        done = read("ethtool", "-S", device)
        if done.returncode == 0:
            found.update(counters.parse_ethtool_stats(device, done.stdout))
    return found


GAUGES = ("Tcp.CurrEstab",)
"""Values of /proc/net/snmp that go down as well as up (open connections)."""


def test_the_one_command_snapshot_reads_what_one_command_per_read_did():
    """On this machine's own /proc, tc and NICs (the root namespace, where other
    processes keep counting): every counter read between two reads of the old way, with
    a value between theirs; lo's `ethtool -S` fails (no statistics) and adds nothing."""
    from tests.fixtures.this_machine import ThisMachine

    nics = sorted(path.name for path in Path("/sys/class/net").iterdir() if not path.name.startswith("ofl-"))
    assert "lo" in nics
    before = _one_read_each(nics)
    now = counters.snapshot(ThisMachine(), nics, softnet=True)
    after = _one_read_each(nics)
    # a device another process adds or removes meanwhile may come or go, nothing else
    assert set(before) & set(after) <= set(now) <= set(before) | set(after)
    assert any(k.startswith("softnet.") for k in now) and any(k.startswith("qdisc.") for k in now)
    assert not any(k.startswith("nic.lo.") for k in now)
    # values between the two reads' (a lab's ofl- device may be made again meanwhile,
    # its counters from zero: not compared)
    moved = {k: (before[k], now[k], after[k]) for k in set(before) & set(after) & set(now)
             if k not in GAUGES and ".ofl-" not in k
             and not min(before[k], after[k]) <= now[k] <= max(before[k], after[k])}
    assert moved == {}


SOFTNET = Path(__file__).parent / "fixtures" / "counters" / "softnet_stat.txt"
QDISCS = ('[{"kind":"pfifo_fast","handle":"0:","dev":"ofl-v0","root":true,"bytes":9,"packets":3,'
          '"drops":17,"overlimits":0,"requeues":2,"backlog":0,"qlen":0},'
          '{"kind":"noqueue","handle":"0:","dev":"lo","drops":0}]')


def test_softnet_columns_by_cpu_number():
    # recorded on this 2-core machine: the second line is CPU 1 (column 12)
    parsed = counters.parse_softnet(SOFTNET.read_text())
    assert set(parsed) == {f"softnet.cpu{c}.{n}" for c in (0, 1) for n in ("dropped", "squeezed", "flow_limit")}
    line = "0187e3ad 00000005 0000037f 0 0 0 0 0 0 000750e8 00000002 0 00000007 0 0"
    assert counters.parse_softnet(line) == {"softnet.cpu7.dropped": 5, "softnet.cpu7.squeezed": 0x37f,
                                            "softnet.cpu7.flow_limit": 2}
    assert counters.parse_softnet("zz 1 2\n") == {}


def test_qdisc_statistics_and_what_counts_as_a_drop():
    parsed = counters.parse_tc_qdisc(QDISCS)
    assert parsed["qdisc.ofl-v0.pfifo_fast.0:.drops"] == 17
    assert parsed["qdisc.ofl-v0.pfifo_fast.0:.requeues"] == 2
    assert counters.parse_tc_qdisc("not json") == {} and counters.parse_tc_qdisc("") == {}
    assert counters.is_drop("qdisc.ofl-v0.pfifo_fast.0:.drops")
    assert counters.is_pressure("qdisc.ofl-v0.pfifo_fast.0:.requeues")
    assert counters.is_drop("softnet.cpu0.dropped") and counters.is_pressure("softnet.cpu0.squeezed")
    assert counters.is_drop("dev.ofl-v0.tx_drop") and counters.is_drop("TcpExt.TCPBacklogDrop")
    assert not counters.is_drop("Tcp.RetransSegs") and not counters.is_drop("Tcp.InCsumErrors")
    assert counters.is_drop("nic.ofl-v0.rx_queue_0_drops")


def test_retransmit_share_of_the_senders_segments():
    grown = {"tx:Tcp.OutSegs": 20000, "tx:Tcp.RetransSegs": 50, "rx:Tcp.OutSegs": 9000}
    assert counters.segment_shares(grown, "tx") == {"tcp_segments": 20000.0, "tcp_retrans_pct": 0.25}
    assert counters.segment_shares(grown, "a") == {}


def test_ethtool_statistics_are_nic_counters():
    text = "NIC statistics:\n     rx_packets: 120\n     rx_dropped: 3\n     tx_queue_0_bytes: 99\n  bogus line\n"
    found = counters.parse_ethtool_stats("ens1f0", text)
    assert found == {"nic.ens1f0.rx_packets": 120, "nic.ens1f0.rx_dropped": 3, "nic.ens1f0.tx_queue_0_bytes": 99}
    assert counters.is_pathology("nic.ens1f0.rx_dropped") and not counters.is_pathology("nic.ens1f0.rx_packets")
