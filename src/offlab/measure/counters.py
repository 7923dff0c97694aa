"""Kernel counters of a host: what a sample adds to every place a packet can be dropped
on its path — /proc/net/snmp and /proc/net/netstat (the files `nstat` reads: retransmits,
checksum errors, backlog drops), /proc/net/dev (drops per interface), the qdiscs'
statistics (`tc -s qdisc`), the per-CPU backlog's drops and squeezes
(/proc/net/softnet_stat, one per machine) and each device's own counters (`ethtool -S`).

A forwarded path that "collapses" under some offload profile (seed 003: checksum offload
on a middlebox) shows up here before it shows up anywhere else, so every sample of the
middlebox plan keeps these deltas. Parsers are pure; one function reads a host.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Iterable, Mapping

from ..hosts import batch

if TYPE_CHECKING:
    from ..hosts import Host

PROC_FILES = ("/proc/net/snmp", "/proc/net/netstat", "/proc/net/dev")
SOFTNET_FILE = "/proc/net/softnet_stat"
"""Per CPU, in hex: processed, dropped, time_squeeze, …, flow_limit_count (column 10),
the CPU's number (column 12, kernels since 5.10). Not per namespace: one per machine."""
SOFTNET_COLUMNS = {1: "dropped", 2: "squeezed", 10: "flow_limit"}
QDISC_FIELDS = ("drops", "requeues", "overlimits")
WINDOW_DEVICE_PREFIX = "window:"
"""Sample counters "window:<host>:dev.<device>.<column>": a device's packets and bytes
over the measured window alone (the runner's "<host>:dev…" span the whole test)."""
QDISC_STATS = ["tc", "-s", "-j", "qdisc", "show"]

DEV_FIELDS = (
    "rx_bytes", "rx_packets", "rx_errs", "rx_drop", "rx_fifo", "rx_frame",
    "rx_compressed", "rx_multicast",
    "tx_bytes", "tx_packets", "tx_errs", "tx_drop", "tx_fifo", "tx_colls",
    "tx_carrier", "tx_compressed",
)  # fmt: skip
"""Columns of /proc/net/dev after the interface name, in the kernel's order."""

PATHOLOGY_COUNTERS = (
    "Ip.InHdrErrors", "Ip.InDiscards", "Ip.OutDiscards",
    "Tcp.InErrs", "Tcp.InCsumErrors", "Tcp.RetransSegs",
    "Udp.InErrors", "Udp.InCsumErrors", "Udp.RcvbufErrors", "Udp.SndbufErrors",
    "TcpExt.TCPLostRetransmit", "TcpExt.TCPBacklogDrop", "IpExt.InCsumErrors",
)  # fmt: skip
"""Counters whose growth during a sample means packets were damaged or thrown away.
Interface `*_drop` and `*_errs` columns count too (see `is_pathology`)."""

Counters = dict[str, int]


def parse_snmp(lines: Iterable[str]) -> Counters:
    """/proc/net/snmp and /proc/net/netstat: a header line `Prefix: Name Name …` followed
    by a value line `Prefix: 1 2 …`. Returns {"Prefix.Name": value}."""
    out: Counters = {}
    header: list[str] | None = None
    for line in lines:
        prefix, sep, rest = line.partition(":")
        if not sep or line[:1].isspace():
            header = None
            continue
        fields = rest.split()
        if fields and not _is_int(fields[0]):
            header = [prefix, *fields]
            continue
        if header is None or header[0] != prefix or len(header) - 1 != len(fields):
            header = None
            continue
        out.update({f"{prefix}.{name}": int(v) for name, v in zip(header[1:], fields)})
        header = None
    return out


def parse_dev(lines: Iterable[str]) -> Counters:
    """/proc/net/dev: `  name: rx_bytes rx_packets … tx_compressed`.
    Returns {"dev.<name>.<column>": value}."""
    out: Counters = {}
    for line in lines:
        name, sep, rest = line.partition(":")
        fields = rest.split()
        if not sep or "|" in line or len(fields) != len(DEV_FIELDS):
            continue
        if not all(_is_int(f) for f in fields):
            continue
        iface = name.strip()
        out.update({f"dev.{iface}.{col}": int(v) for col, v in zip(DEV_FIELDS, fields)})
    return out


def parse_all(text: str) -> Counters:
    """The concatenation of the three files, as `cat` prints them."""
    lines = text.splitlines()
    return {**parse_snmp(lines), **parse_dev(lines)}


def delta(before: Mapping[str, int], after: Mapping[str, int]) -> Counters:
    """What grew between two snapshots (counters that did not change are left out, so a
    sample stores only what happened). A counter that went backwards (an interface
    recreated) is reported from zero."""
    out: Counters = {}
    for name, value in after.items():
        grown = value - before.get(name, 0)
        if grown < 0:
            grown = value
        if grown:
            out[name] = grown
    return out


def is_pathology(name: str) -> bool:
    """Does growth of this counter mean damaged or dropped packets?"""
    if name.startswith("nic."):
        return any(word in name for word in ("drop", "err", "miss", "discard", "fifo", "crc"))
    if name.startswith("dev."):
        return name.endswith(("_drop", "_errs", "_fifo", "_frame", "_carrier"))
    if name.startswith("qdisc."):
        return name.endswith(".drops")
    if name.startswith("softnet."):
        return name.endswith((".dropped", ".flow_limit"))
    return name in PATHOLOGY_COUNTERS or "CsumErrors" in name


def is_drop(name: str) -> bool:
    """A counter of packets thrown away on the path (not damaged ones, not retransmits):
    what the drop validity check (report/drops.py) sums."""
    if name.startswith("nic."):
        return any(word in name for word in ("drop", "miss", "discard", "fifo", "no_buf", "nobuf"))
    if name.startswith("dev."):
        return name.endswith(("_drop", "_fifo"))
    if name.startswith(("qdisc.", "softnet.")):
        return is_pathology(name)
    return name in STACK_DROPS


STACK_DROPS = frozenset({"Ip.InDiscards", "Ip.OutDiscards", "Udp.InErrors", "Udp.RcvbufErrors",
                         "Udp.SndbufErrors", "TcpExt.TCPBacklogDrop", "TcpExt.TCPRcvQDrop",
                         "TcpExt.TCPZeroWindowDrop", "TcpExt.TCPMinTTLDrop", "TcpExt.PFMemallocDrop",
                         "TcpExt.TCPReqQFullDrop", "TcpExt.ListenDrops", "TcpExt.LockDroppedIcmps"})
"""The stack's own counters (/proc/net/snmp, netstat) of packets it threw away."""


def is_pressure(name: str) -> bool:
    """Growth that says a queue was under pressure without losing anything: a softirq
    that ran out of budget (`time_squeeze`), a qdisc that requeued."""
    return name.endswith((".squeezed", ".requeues"))


def parse_softnet(text: str) -> Counters:
    """/proc/net/softnet_stat → {"softnet.cpu<N>.dropped": …, ".squeezed", ".flow_limit"};
    the CPU's number from column 12 when the kernel prints it, else the line's."""
    out: Counters = {}
    for line_number, line in enumerate(text.splitlines()):
        fields = line.split()
        try:
            values = [int(f, 16) for f in fields]
        except ValueError:
            continue
        if len(values) < 3:
            continue
        cpu = values[12] if len(values) > 12 else line_number
        for column, name in SOFTNET_COLUMNS.items():
            if column < len(values):
                out[f"softnet.cpu{cpu}.{name}"] = values[column]
    return out


def parse_tc_qdisc(text: str) -> Counters:
    """`tc -s -j qdisc show` → {"qdisc.<dev>.<handle>.drops": …} (and requeues,
    overlimits); a child qdisc of a multiqueue root is named by its parent."""
    try:
        qdiscs = json.loads(text) if text.strip() else []
    except json.JSONDecodeError:
        return {}
    out: Counters = {}
    for qdisc in qdiscs if isinstance(qdiscs, list) else []:
        if not isinstance(qdisc, dict) or "dev" not in qdisc:
            continue
        where = qdisc.get("handle") or qdisc.get("parent") or "?"
        for name in QDISC_FIELDS:
            value = qdisc.get(name)
            if isinstance(value, int):
                key = f"qdisc.{qdisc['dev']}.{qdisc.get('kind', '?')}.{where}.{name}"
                out[key] = out.get(key, 0) + value
    return out


def parse_ethtool_stats(device: str, text: str) -> Counters:
    """`ethtool -S DEV`: the NIC's own counters ("nic.<dev>.<stat>"); lines that are not
    `name: integer` (the header, per-queue blocks some drivers print) are skipped."""
    out: Counters = {}
    for line in text.splitlines():
        name, sep, value = line.strip().rpartition(":")
        value = value.strip()
        if sep and name and _is_int(value):
            out[f"nic.{device}.{name.strip()}"] = int(value)
    return out


def snapshot(host: "Host", nics: Iterable[str] = (), softnet: bool = False) -> Counters:
    """The three files as the host sees them (/proc/net is per namespace), its qdiscs'
    statistics, the device counters of `nics` (`ethtool -S`) and, with `softnet`, the
    machine's per-CPU backlog counters: all read by one command on the host
    (hosts/batch.py), each parsed as when it was read on its own."""
    devices = list(nics)
    backlog = [["cat", SOFTNET_FILE]] if softnet else []
    done = batch.run_reads(host, [["cat", *PROC_FILES], QDISC_STATS, *backlog,
                                  *(["ethtool", "-S", device] for device in devices)])
    proc, qdiscs, backlog_done, nics_done = done[0], done[1], done[2:2 + len(backlog)], done[2 + len(backlog):]
    for read in (proc, *backlog_done):  # files every kernel has: not there is an error
        batch.require(read, host.name)
    found = parse_all(proc.stdout)
    if qdiscs.returncode == 0:  # no tc there, or no qdiscs: no qdisc counters
        found.update(parse_tc_qdisc(qdiscs.stdout))
    for read in backlog_done:
        found.update(parse_softnet(read.stdout))
    for device, read in zip(devices, nics_done):  # a device without statistics (lo, veth on old kernels)
        if read.returncode == 0:
            found.update(parse_ethtool_stats(device, read.stdout))
    return found


def snapshot_many(hosts: Mapping[str, "Host"], nics: Mapping[str, Iterable[str]] | None = None) -> Counters:
    """Snapshots of several hosts, each counter prefixed with the host's name
    ("r:Tcp.RetransSegs", "rx:nic.ens1f0.rx_dropped"). softnet_stat belongs to a machine,
    not a namespace: it is read once per machine, under the first of its hosts' names
    (on one machine every host would show the same numbers)."""
    out: Counters = {}
    machines: set[str] = set()
    for name, host in hosts.items():
        first = host.machine not in machines
        machines.add(host.machine)
        found = snapshot(host, (nics or {}).get(name, ()), softnet=first)
        out.update({f"{name}:{k}": v for k, v in found.items()})
    return out


def segment_shares(grown: Mapping[str, int], sender: str) -> dict[str, float]:
    """The sender's TCP segments over a sample and the share it retransmitted (RFC 6349's
    TCP efficiency is 100 % minus that share), from its own /proc/net/snmp deltas;
    nothing when it sent no TCP."""
    sent = grown.get(f"{sender}:Tcp.OutSegs", 0)
    if not sent:
        return {}
    again = grown.get(f"{sender}:Tcp.RetransSegs", 0)
    return {"tcp_segments": float(sent), "tcp_retrans_pct": 100.0 * again / sent}


def _is_int(text: str) -> bool:
    return text.lstrip("-").isdigit()
