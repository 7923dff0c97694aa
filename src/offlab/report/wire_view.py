"""What the wire delivered, per profile: packets per second and bytes per packet at both
ends (the sender's device transmitting, the receiver's device receiving, from the
devices' own counters over the measured window), and the receive path in force at the
receiver's device. A veth hands the receiver whatever the sender's device took, and
takes its NAPI/GRO path only when the transmitting device has no TSO: these columns show
which wire and which path a profile's figures come from."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..measure.counters import WINDOW_DEVICE_PREFIX
from ..hosts.naming import RX_DEV, TX_DEV, WIRE_RX
from ..hosts.offloads import GRO, TSO
from ..analysis.stats import summary
from .fragments import fragmentation

if TYPE_CHECKING:
    from .model import ProfileRow


def _per_sample(row: "ProfileRow", host: str, device: str, direction: str) -> tuple[list[float], list[float]]:
    """Packets/s and bytes/packet of one device over each sample's measured window."""
    rates, sizes = [], []
    for sample in row.samples:
        c = sample.counters
        prefix = f"{WINDOW_DEVICE_PREFIX}{host}:dev.{device}.{direction}_"
        packets, octets, window = c.get(prefix + "packets"), c.get(prefix + "bytes"), c.get("cpu_window_s")
        if packets and octets is not None and window:
            rates.append(packets / window)
            sizes.append(octets / packets)
    return rates, sizes


def _sizes_over_test(row: "ProfileRow", host: str, device: str, direction: str) -> list[float]:
    """Bytes per packet over the whole test (warm-up included): a ratio, so still the
    wire's, where a sample kept no window counters (UDP capacity trials)."""
    sizes = []
    for sample in row.samples:
        prefix = f"{host}:dev.{device}.{direction}_"
        packets, octets = sample.counters.get(prefix + "packets"), sample.counters.get(prefix + "bytes")
        if packets and octets is not None:
            sizes.append(octets / packets)
    return sizes


def packet_cells(row: "ProfileRow") -> tuple[str, str]:
    """("sender · receiver" packets/s in thousands, "sender · receiver" bytes/packet);
    without window counters the rate is "–" and the size is over the whole test; "–" for
    both where the devices are not veth ends of the lab's. A UDP case whose datagrams
    were IP-fragmented says so beside its sizes (fragments.py): each fragment is a packet."""
    fragmented = fragmentation(row)
    note = f" ⚠ IP-fragmented: {fragmented.per_datagram:.3g} per datagram" if fragmented else ""
    ends = (_per_sample(row, "tx", TX_DEV, "tx"), _per_sample(row, "rx", RX_DEV, "rx"))
    if not all(rates for rates, _ in ends):
        whole = (_sizes_over_test(row, "tx", TX_DEV, "tx"), _sizes_over_test(row, "rx", RX_DEV, "rx"))
        if not all(whole):
            return "–", "–"
        return "–", " · ".join(f"{summary(s).mean:,.0f}" for s in whole) + " (whole test)" + note
    rates = " · ".join(f"{summary(r).mean / 1e3:,.0f}k" for r, _ in ends)
    sizes = " · ".join(f"{summary(s).mean:,.0f}" for _, s in ends)
    return rates, sizes + note


def receive_path(row: "ProfileRow") -> str:
    """The receiver device's path: NAPI with GRO (veth takes it when its GRO is on and
    the device transmitting to it has no TSO) in its NAPI thread, or the backlog without
    GRO; on the receiver's core either way (threaded NAPI pinned, RPS)."""
    state = row.offload_state
    receiver = state.get(f"rx:{RX_DEV}", {})
    feeding = state.get(f"wire:{WIRE_RX}") or state.get(f"tx:{TX_DEV}", {})
    if GRO not in receiver or TSO not in feeding:
        return "–"
    core = row.samples[-1].roles.get("receiver") if row.samples else None
    where = f"core {core}" if core is not None else "the receiver's core"
    if receiver[GRO].on and not feeding[TSO].on:
        return f"NAPI + GRO (threaded, {where})"
    why = "GRO off" if not receiver[GRO].on else "sender's TSO on"
    return f"backlog, no GRO ({why}; RPS, {where})"
