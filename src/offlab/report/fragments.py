"""IP fragmentation of a UDP case, from the sender's own counters (/proc/net/snmp of its
namespace, over each sample's whole test): a datagram larger than the path's MTU leaves
as several IP fragments, each a packet of its own, and the receiver reassembles them.

Over a tunnel this is the usual trap: a 1472-byte payload fills a 1500-byte IP packet,
which the VXLAN device (MTU 1450: 50 bytes of outer headers) cannot carry whole, so every
datagram leaves as a full fragment and a short one, and the wire's bytes per packet
halve (824 on the veth in the quick plan's VXLAN UDP rows). What such a case measures
is fragmentation and reassembly, not a datagram path; the report says so beside its
bytes per packet and advises nothing from it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .model import ProfileRow

FRAGMENTED_SHARE = 0.01
"""A UDP case counts as fragmenting when more than this share of its datagrams were
fragmented (a stray probe or ARP-time datagram is not the case's traffic)."""


@dataclass(frozen=True)
class Fragmentation:
    """What the sender's IP layer did to a row's datagrams, summed over its samples."""

    datagrams: int
    """Udp.OutDatagrams: the datagrams the application sent."""
    fragmented: int
    """Ip.FragOKs: datagrams the IP layer had to fragment."""
    fragments: int
    """Ip.FragCreates: the fragments it made of them."""

    @property
    def share(self) -> float:
        return self.fragmented / self.datagrams if self.datagrams else 0.0

    @property
    def per_datagram(self) -> float:
        """Fragments per fragmented datagram."""
        return self.fragments / self.fragmented if self.fragmented else 0.0

    def text(self) -> str:
        """"2 IP fragments per datagram (100% of datagrams)"."""
        return (f"{self.per_datagram:.3g} IP fragments per datagram ({self.share:.0%} of datagrams, "
                "sender's Ip.FragCreates / Ip.FragOKs)")


def fragmentation(row: "ProfileRow") -> Fragmentation | None:
    """The row's fragmentation when it is a UDP case whose hosts fragmented more than
    FRAGMENTED_SHARE of the datagrams they sent; None otherwise (TCP never fragments: it
    sizes its segments to the path). The counters of every host of the sample are summed
    ("tx:Ip.FragOKs", …): only the sender sends the case's datagrams, and a namespace
    that forwards (the wire's bridge) neither sends nor fragments."""
    if row.case.traffic.protocol != "udp":
        return None
    totals = dict.fromkeys(("Udp.OutDatagrams", "Ip.FragOKs", "Ip.FragCreates"), 0)
    for sample in row.samples:
        for name, value in sample.counters.items():
            _, _, counter = name.partition(":")  # "window:<host>:…" names are devices' only
            if counter in totals:
                totals[counter] += int(value)
    found = Fragmentation(totals["Udp.OutDatagrams"], totals["Ip.FragOKs"], totals["Ip.FragCreates"])
    return found if found.fragmented and found.share > FRAGMENTED_SHARE else None
