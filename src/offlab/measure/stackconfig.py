"""The network stack each host ran a topology with: the settings that move TCP results
as much as an offload does — congestion control, the default qdisc and the test
devices' own, socket buffer limits (tcp_rmem/tcp_wmem), the backlog's length
(netdev_max_backlog), GRO's flush timeout, the largest GSO/GRO packet a device takes,
the CPU frequency governor — and the versions of the tools the host runs the tests with.

Read once per topology and host through the host interface (so a namespace and a server
over SSH are read alike), stored with the run, shown in the report and diffed by
`offlab compare`. Parsers are pure; `read` runs its commands on a host as one (hosts/batch.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Mapping

from ..hosts import batch

if TYPE_CHECKING:
    from ..hosts import Host

SYSCTLS = (
    "net/ipv4/tcp_congestion_control", "net/core/default_qdisc", "net/ipv4/tcp_rmem",
    "net/ipv4/tcp_wmem", "net/core/rmem_max", "net/core/wmem_max", "net/core/netdev_max_backlog",
    "net/core/netdev_budget", "net/ipv4/tcp_mtu_probing",
)  # fmt: skip
"""/proc/sys paths (sysctl names with dots for slashes); per namespace where the kernel
makes them so (the TCP ones), else the machine's."""
DEVICE_FILES = ("gro_flush_timeout", "napi_defer_hard_irqs", "tx_queue_len")
"""/sys/class/net/<dev>/ files of each test device."""
LINK_FIELDS = ("gso_max_size", "gso_max_segs", "gro_max_size", "mtu")
"""`ip -d -j link show` fields of each test device."""
GOVERNORS = "/sys/devices/system/cpu/cpufreq"
TOOLS = {"iperf3": ["iperf3", "--version"], "ethtool": ["ethtool", "--version"], "ip": ["ip", "-V"],
         "irtt": ["irtt", "version"], "kernel": ["uname", "-r"]}
"""Tool → the command printing its version on the host (first line kept)."""

Config = dict[str, str]


def parse_grep(text: str, strip: str = "") -> Config:
    """`grep -H "" FILE…` output ("path:value" per line) → {path without `strip`: value};
    a file of several lines keeps them joined by "; "."""
    out: Config = {}
    for line in text.splitlines():
        path, sep, value = line.partition(":")
        if not sep:
            continue
        key = path.removeprefix(strip)
        value = " ".join(value.split())
        out[key] = f"{out[key]}; {value}" if key in out else value
    return out


def sysctl_name(path: str) -> str:
    return path.replace("/", ".")


def parse_links(text: str) -> Config:
    """`ip -d -j link show` → {"dev.<name>.gso_max_size": …} for LINK_FIELDS."""
    try:
        links = json.loads(text) if text.strip() else []
    except json.JSONDecodeError:
        return {}
    out: Config = {}
    for link in links if isinstance(links, list) else []:
        name = link.get("ifname") if isinstance(link, dict) else None
        if name:
            out.update({f"dev.{name}.{field}": str(link[field]) for field in LINK_FIELDS if field in link})
    return out


def parse_qdiscs(text: str, devices: Iterable[str]) -> Config:
    """`tc -j qdisc show` → {"dev.<name>.qdisc": "fq_codel"} (the root qdisc of each
    device asked for; "mq" and its children as "mq(fq_codel×4)")."""
    try:
        qdiscs = json.loads(text) if text.strip() else []
    except json.JSONDecodeError:
        return {}
    wanted = set(devices)
    roots: dict[str, str] = {}
    children: dict[str, list[str]] = {}
    for qdisc in qdiscs if isinstance(qdiscs, list) else []:
        if not isinstance(qdisc, dict) or qdisc.get("dev") not in wanted:
            continue
        if qdisc.get("root"):
            roots[qdisc["dev"]] = str(qdisc.get("kind"))
        else:
            children.setdefault(qdisc["dev"], []).append(str(qdisc.get("kind")))
    out: Config = {}
    for dev, kind in roots.items():
        kids = children.get(dev, [])
        if kids:
            kind += "(" + ", ".join(f"{k}×{kids.count(k)}" for k in sorted(set(kids))) + ")"
        out[f"dev.{dev}.qdisc"] = kind
    return out


def read(host: "Host", devices: Iterable[str]) -> Config:
    """The stack configuration of one host and its test devices."""
    devices = list(devices)
    paths = [f"/proc/sys/{p}" for p in SYSCTLS]
    paths += [f"/sys/class/net/{d}/{f}" for d in devices for f in DEVICE_FILES]
    settings, links, qdiscs, governors, *tools = batch.run_reads(host, [
        ["grep", "-H", "", *paths], ["ip", "-d", "-j", "link", "show"], ["tc", "-j", "qdisc", "show"],
        ["grep", "-r", "--include=scaling_governor", "-H", "", GOVERNORS], *TOOLS.values()])
    found = {sysctl_name(k) if not k.startswith("/sys/") else _device_key(k): v
             for k, v in parse_grep(settings.stdout, strip="/proc/sys/").items()}
    if host.machine == "local":  # the machine's own (not per namespace) sysctls
        found.update({sysctl_name(p): " ".join(Path(f"/proc/sys/{p}").read_text().split())
                      for p in SYSCTLS if sysctl_name(p) not in found and Path(f"/proc/sys/{p}").exists()})
    found.update({k: v for k, v in parse_links(links.stdout).items() if k.split(".")[1] in devices})
    found.update(parse_qdiscs(qdiscs.stdout, devices))
    governor = parse_grep(governors.stdout)
    found["cpu.governor"] = ", ".join(sorted(set(governor.values()))) or "none (no cpufreq on this machine)"
    for tool, done in zip(TOOLS, tools, strict=True):
        text = (done.stdout or done.stderr).strip().splitlines()
        found[f"tool.{tool}"] = text[0] if done.returncode == 0 and text else "not installed"
    return found


def _device_key(path: str) -> str:
    """/sys/class/net/ofl-v0/gro_flush_timeout → dev.ofl-v0.gro_flush_timeout."""
    _, _, rest = path.partition("/sys/class/net/")
    device, _, name = rest.partition("/")
    return f"dev.{device}.{name}"


Stack = Mapping[str, Mapping[str, Mapping[str, str]]]
"""place (topology: "bare · MTU 1500") → host → setting → value."""


def differences(a: Stack, b: Stack) -> tuple[str, ...]:
    """Settings that differ between two runs' stacks, where both measured the same place
    and host: "bare · MTU 1500 rx net.ipv4.tcp_congestion_control: cubic → bbr"."""
    out = []
    for place in a:
        for host in a[place]:
            mine, theirs = a[place][host], b.get(place, {}).get(host)
            if theirs is None:
                continue
            for key in sorted(set(mine) | set(theirs)):
                old, new = mine.get(key, "–"), theirs.get(key, "–")
                if old != new:
                    out.append(f"{place} {host} {key}: {old} → {new}")
    return tuple(out)
