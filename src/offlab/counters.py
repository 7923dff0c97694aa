"""Kernel counters of a namespace: what a sample adds to /proc/net/snmp, /proc/net/netstat
and /proc/net/dev (retransmits, checksum errors, drops per interface).

A forwarded path that "collapses" under some offload profile (seed 003: checksum offload
on a middlebox) shows up here before it shows up anywhere else, so every sample of the
middlebox plan keeps these deltas. Parsers are pure; one function reads a host.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Mapping

if TYPE_CHECKING:
    from .hosts import Host

PROC_FILES = ("/proc/net/snmp", "/proc/net/netstat", "/proc/net/dev")

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
    return name in PATHOLOGY_COUNTERS or "CsumErrors" in name


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


def snapshot(host: "Host", nics: Iterable[str] = ()) -> Counters:
    """The three files as the host sees them (one command; /proc/net is per namespace),
    and the NIC counters of `nics` (`ethtool -S`, real hosts)."""
    found = parse_all(host.run(["cat", *PROC_FILES], timeout=10.0).stdout)
    for device in nics:
        done = host.run(["ethtool", "-S", device], timeout=10.0, check=False)
        if done.returncode == 0:
            found.update(parse_ethtool_stats(device, done.stdout))
    return found


def snapshot_many(hosts: Mapping[str, "Host"], nics: Mapping[str, Iterable[str]] | None = None) -> Counters:
    """Snapshots of several hosts, each counter prefixed with the host's name
    ("r:Tcp.RetransSegs", "rx:nic.ens1f0.rx_dropped")."""
    out: Counters = {}
    for name, host in hosts.items():
        out.update({f"{name}:{k}": v for k, v in snapshot(host, (nics or {}).get(name, ())).items()})
    return out


def _is_int(text: str) -> bool:
    return text.lstrip("-").isdigit()
