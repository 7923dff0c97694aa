"""Where lost UDP datagrams went: the kernel counters of a trial, read as causes.

A datagram iperf3 counts as lost was dropped somewhere the kernel counts it: the
receiving socket's buffer was full (`Udp.RcvbufErrors`), its checksum was wrong
(`*InCsumErrors`), the socket layer refused it for another reason (the rest of
`Udp.InErrors`, which also counts the first two), the sender's device or qdisc
refused it, an interface or qdisc further on dropped it (`dev.*.rx_drop`/`tx_drop`,
`nic.*` drop counters, `qdisc.*.drops`; per host the largest, as a tunnel device
counts its underlay's drop again), the IP layer discarded it
(`Ip.InDiscards`/`OutDiscards`/`InHdrErrors`), or a CPU's input backlog overflowed
(`softnet.dropped`, machine-wide). What no counter explains is "in no counter" (e.g.
a datagram still in flight when the trial ended). The kernel counts packets, not
datagrams: with UDP GSO/GRO one dropped packet may carry up to 64 datagrams, so for such
traffic much of the loss lands "in no counter" while the counters still say where
packets were dropped.

One drop can show in several counters, so they are read in layers, each counting only
what the layer below did not: a datagram the sender's device drops (a veth whose
peer's receive backlog is full: the receiving CPU is behind) is also an
`Ip.OutDiscards` and, handed up as ENOBUFS, a `Udp.SndbufErrors` of the sender —
it counts once, as "sender device queue"; a backlog drop of veth also shows as the
device's drop, so `softnet.dropped` counts only beyond the interfaces' drops.

Pure: the caller gives the counter deltas of one trial ("rx:Udp.RcvbufErrors" …, keyed
by host as in a sample) and which hosts sent and received.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Mapping

RCVBUF = "receiver socket buffer"
SNDBUF = "sender socket buffer"
SENDER_QUEUE = "sender device queue"
CHECKSUM = "checksum"
SOCKET_OTHER = "receiver socket, other"
INTERFACE = "interface or qdisc drop on the path"
IP_LAYER = "IP discard"
BACKLOG = "CPU input backlog"
UNEXPLAINED = "in no counter"
CAUSES = (RCVBUF, SENDER_QUEUE, SNDBUF, CHECKSUM, SOCKET_OTHER, INTERFACE, IP_LAYER, BACKLOG,
          UNEXPLAINED)
"""Every cause, in the order a report lists them."""
SLUGS = {RCVBUF: "rcvbuf", SENDER_QUEUE: "txqueue", SNDBUF: "sndbuf", CHECKSUM: "csum", SOCKET_OTHER: "socket",
         INTERFACE: "interface", IP_LAYER: "ip", BACKLOG: "backlog", UNEXPLAINED: "unexplained"}
"""Short names for sample counters ("loss_rcvbuf")."""
_IP_COUNTERS = ("Ip.InDiscards", "Ip.OutDiscards", "Ip.InHdrErrors")
SOCKET_BUFFERS = (RCVBUF, SNDBUF)
_DROP_WORDS = ("drop", "discard", "miss", "fifo")


@dataclass(frozen=True)
class LossCauses:
    """Drops of one trial by cause (counts of datagrams or packets)."""

    lost: int
    """Datagrams the traffic tool counted as lost over its measured window."""
    counts: Mapping[str, float]
    """Cause → drops the counters saw over the whole trial (warm-up included)."""

    @property
    def main(self) -> str | None:
        """The cause with most drops, None when nothing was lost or dropped."""
        found = [(n, c) for c, n in self.counts.items() if n > 0]
        return max(found)[1] if found else None

    def share(self, cause: str) -> float:
        """This cause's part of every drop counted (0 when nothing was dropped)."""
        total = sum(self.counts.values())
        return self.counts.get(cause, 0.0) / total if total else 0.0

    @property
    def socket_buffer_bound(self) -> bool:
        """Most drops overflowed a socket buffer: the trial measured a buffer, not a path."""
        return sum(self.share(c) for c in SOCKET_BUFFERS) > 0.5

    def counters(self, prefix: str) -> dict[str, float]:
        """As sample counters ("limit_loss_rcvbuf"): the loss, and the causes that saw drops."""
        found = {f"{prefix}_{SLUGS[c]}": float(n) for c, n in self.counts.items() if n > 0}
        return {f"{prefix}_lost": float(self.lost), **found}

    def text(self) -> str:
        """"92 % receiver socket buffer, 8 % interface or qdisc drop"; "none" if nothing."""
        parts = [f"{100 * self.share(c):.0f} % {c}" for c in CAUSES if self.counts.get(c, 0) > 0]
        return ", ".join(parts) if parts else "none"


def attribute(lost: int, grown: Mapping[str, float], sender: str, receiver: str) -> LossCauses:
    """Drops of one trial by cause, from the counters that grew (`grown`, host-prefixed)."""
    def on(host: str, name: str) -> float:
        return float(grown.get(f"{host}:{name}", 0.0))

    def summed(wanted, hosts: str = "any") -> float:
        return sum(float(v) for k, v in grown.items() if wanted(k.partition(":")[2])
                   and (hosts == "any" or (k.partition(":")[0] == sender) == (hosts == "sender")))

    rcvbuf = on(receiver, "Udp.RcvbufErrors")
    sender_device = _device_drops(grown, lambda host: host == sender)
    sender_ip = max(0.0, on(sender, "Ip.OutDiscards") - sender_device)
    path_interfaces = _device_drops(grown, lambda host: host != sender)
    counts = {
        RCVBUF: rcvbuf,
        SENDER_QUEUE: sender_device,
        SNDBUF: max(0.0, on(sender, "Udp.SndbufErrors") - sender_device - sender_ip),
        CHECKSUM: summed(lambda c: c.endswith("InCsumErrors")),
        SOCKET_OTHER: max(0.0, on(receiver, "Udp.InErrors") - rcvbuf - on(receiver, "Udp.InCsumErrors")),
        INTERFACE: path_interfaces,
        IP_LAYER: sender_ip + summed(lambda c: c in _IP_COUNTERS, "others"),
        BACKLOG: max(0.0, float(grown.get("softnet.dropped", 0.0)) - sender_device - path_interfaces),
    }
    counts[UNEXPLAINED] = max(0.0, lost - sum(counts.values()))
    return LossCauses(lost, counts)


def _device_drops(grown: Mapping[str, float], wanted_host) -> float:
    """Interface and qdisc drops of the wanted hosts: per host the largest of its devices'
    drops, since a tunnel device counts its underlay's drop again (a VXLAN device's
    tx_drop when the veth under it refused the packet)."""
    per_host: dict[str, float] = {}
    for name, value in grown.items():
        host, _, counter = name.partition(":")
        if counter and wanted_host(host) and _interface_drop(counter):
            per_host[host] = max(per_host.get(host, 0.0), float(value))
    return sum(per_host.values())


def _interface_drop(counter: str) -> bool:
    if counter.startswith("dev."):
        return counter.endswith(("_drop", "_fifo"))
    if counter.startswith("qdisc."):
        return counter.endswith(".drops")
    if counter.startswith("nic."):
        return any(word in counter.rsplit(".", 1)[-1] for word in _DROP_WORDS)
    return False


def from_sample_counters(counters: Mapping[str, float], prefix: str) -> LossCauses | None:
    """The causes a sample stored under `prefix` (see `LossCauses.counters`), or None if
    it stored none (a sample measured before loss attribution existed)."""
    if f"{prefix}_lost" not in counters:
        return None
    counts = {cause: counters.get(f"{prefix}_{slug}", 0.0) for cause, slug in SLUGS.items()}
    return LossCauses(int(counters[f"{prefix}_lost"]), counts)


# --- what the per-trial snapshot adds to the kernel's /proc/net counters -----------------


def parse_qdisc(text: str) -> dict[str, float]:
    """`tc -s -j qdisc show`: drops per device summed over its qdiscs ("qdisc.<dev>.drops")."""
    try:
        qdiscs = json.loads(text or "[]")
    except json.JSONDecodeError:
        return {}
    out: dict[str, float] = {}
    for qdisc in qdiscs if isinstance(qdiscs, list) else []:
        dev, drops = qdisc.get("dev"), qdisc.get("drops")
        if isinstance(dev, str) and isinstance(drops, int):
            out[f"qdisc.{dev}.drops"] = out.get(f"qdisc.{dev}.drops", 0.0) + drops
    return out


def parse_softnet(text: str) -> float:
    """/proc/net/softnet_stat: input-backlog drops summed over CPUs (its second column, hex)."""
    total = 0
    for line in text.split("\n"):
        fields = line.split()
        if len(fields) > 1:
            total += int(fields[1], 16)
    return float(total)
