"""What turning an offload off makes the CPU do instead: the mechanism behind each
effect, named in the advice and used to tell an effect the mechanism explains from one
it cannot (validity.py)."""

from __future__ import annotations

from ..hosts.offloads import GRO, GSO, RX_CSUM, TSO, TX_CSUM, UDP_TNL

MECHANISMS = {
    TSO: "with TSO off the sending stack cuts each 64 KiB write into MTU segments in software "
         "(GSO) and every segment walks the qdisc and the device driver",
    TX_CSUM: "without tx checksumming every segment's TCP/UDP checksum is computed by the CPU, "
             "and TSO, which needs it, goes off with it",
    GSO: "with GSO off too, segments are built by TCP itself, one skb per MSS",
    UDP_TNL: "without tunnel segmentation the stack segments the inner TCP before encapsulating, "
             "one VXLAN packet per MSS",
    GRO: "without GRO the receiving stack processes every MTU frame on its own instead of one "
         "coalesced packet per flow and poll",
    RX_CSUM: "without rx checksumming the receiver verifies every checksum in software",
}


def mechanism(features: tuple[str, ...]) -> str:
    """The known mechanism of turning these features off, or "" if none is known."""
    known = [MECHANISMS[f] for f in features if f in MECHANISMS]
    return "; ".join(known)
