"""Which measured differences may become advice about offloads, and why the others may
not — each with the mechanism, in a sentence a network engineer can check.

A difference between two profiles is an offload effect only if neither side was
overloaded and the difference is not a property of the lab's virtual devices:

* **Drops on the path.** A TCP case whose path dropped packets inside a host (a device,
  qdisc, backlog or stack counter grew by more than 1 in 10 000 of its segments) measured
  TCP's loss recovery: set apart in either direction, with the counter named (drops.py).
* **Not below capacity.** A paced (service-demand) row that carried less than 95 % of
  its offered rate was at its capacity: its CPU per Gbit/s is no service demand.
* **Overload.** A UDP sample that lost more than its loss bound (0.1 % by default)
  measured a receiver that did not keep up (at `-b 0` one in livelock): how two
  processes contend for the cores, not what a profile carries. Such rows are shown, flagged, and used for nothing.
* **veth transmit path.** TSO (tx-tcp-segmentation and the features that carry it)
  segments TCP only. On veth, turning it off also changes how the pair hands packets
  over (without TSO the peer takes its NAPI/GRO receive path), which moves UDP rates;
  on a NIC it would not. So a TCP-only feature's effect on UDP, measured over veth,
  is the device's, not the offload's.
* **Super-packets on the wire.** A veth pair carries the sender's 64 KiB TSO/GSO
  super-packets whole: the receiver's GRO has nothing to merge and its checksum is
  never computed (the skb stays CHECKSUM_PARTIAL). Receiver offload effects are only
  measurable where the wire carries MTU-sized frames, as from a NIC pair (the lab's
  `wire = "mtu"` topology parameter, docs/methodology.md).

* **IP-fragmented.** A UDP case whose datagrams were larger than the path's MTU (a
  1472-byte payload over a 1450-byte VXLAN device) left as IP fragments (the sender's
  Ip.FragOKs and Ip.FragCreates, fragments.py): it measured fragmentation and
  reassembly, so it is shown with its fragments per datagram and advises nothing.

* **Against the mechanism, on one machine.** Every offload here saves CPU work per byte;
  turning one off can only add work. When a local run measures the opposite (more
  throughput, or less CPU per Gbps, with the offload off), sender, receiver and the
  lab's devices share that machine's cores, and the profile that does more work per
  packet has most likely moved the balance between them (a slower receiver is polled in
  larger batches, a sender held back by it leaves a core to the receiver), or changed
  the TCP exchange itself (GRO acknowledges merged packets, not frames) — either way not
  the work the offload saves, and it is set apart; on real hosts such a result may be
  real (a middlebox that mishandles offloaded packets, as the pfSense-on-virtio
  report among the seeds found), is advised, and says it goes against the mechanism.

* **Emulated CPUs.** Guests run under QEMU's TCG when KVM does not work (a nested
  guest here): every guest instruction is translated in software, so a rate measures the
  emulator, not the path, and no difference between two such rows is advice.

Runs on real hosts (run settings `hosts` other than "local") have no virtual devices on
the path, so only overload and emulation apply there (and results against the mechanism
are advised with that said).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..hosts.offloads import GRO, GSO, RX_CSUM, TSO, TX_CSUM
from ..records import GUEST_ENTRY, TCG
from .capacity_limits import verdict as capacity_verdict
from .drops import drops_where_none_belong
from .effects import Effect, Step, against_mechanism
from .fragments import fragmentation
from .mechanisms import mechanism
from .phrases import format_change, format_p
from .states import display_list

if TYPE_CHECKING:
    from .model import ProfileRow

TCP_ONLY = frozenset({TSO, "tx-tcp-segmentation", "tx-tcp6-segmentation", "tx-tcp-ecn-segmentation",
                      "tx-tcp-mangleid-segmentation"})
RECEIVER = frozenset({GRO, RX_CSUM, "large-receive-offload", "rx-gro-list", "rx-udp-gro-forwarding"})
MTU_WIRE = "mtu"
"""Topology parameter `wire`: the sender's super-packets are cut to MTU frames before the
wire (software segmentation on a core of its own), as a NIC pair would deliver them."""



PACE_KEPT = 0.95
"""A paced row that carried less than this share of its offered rate was at capacity."""


def below_pace(row: "ProfileRow") -> tuple[float, float] | None:
    """(offered, carried) in Gbit/s when a paced row did not keep its pace, else None."""
    offered = [s.counters["offered_bps"] for s in row.samples if "offered_bps" in s.counters]
    if not row.case.traffic.service_demand or not offered:
        return None
    pace = sum(offered) / len(offered) / 1e9
    return (pace, row.throughput.mean) if row.throughput.mean < PACE_KEPT * pace else None


def overloaded(row: "ProfileRow") -> bool:
    """A UDP row with a sample above its loss bound: a stream, or a capacity whose
    verification trial still lost too much one step down (capacity.py)."""
    traffic = row.case.traffic
    if traffic.protocol != "udp" or traffic.mode == "rr":
        return False
    return any(s.loss_percent is not None and s.loss_percent > traffic.loss_percent for s in row.samples)


def emulated(row: "ProfileRow") -> bool:
    """A row measured in guests whose CPUs QEMU emulated (TCG)."""
    return any(s.datapath.get(GUEST_ENTRY, {}).get(TCG) is not None
               and s.datapath[GUEST_ENTRY][TCG].on for s in row.samples)


NOT_AN_EFFECT = "not an offload effect"
IMPRECISE = "imprecise"
"""Kinds of Exclusion: the difference is no offload's at all, or it may be one but was
measured less precisely than the run asked (precision.py)."""


@dataclass(frozen=True)
class Exclusion:
    """Why a step's difference is not advice: a short label (what a summary line names)
    and the mechanism with what to do instead."""

    label: str
    why: str
    kind: str = NOT_AN_EFFECT

    def __str__(self) -> str:
        return f"{self.label}: {self.why}"


def exclusion(step: "Step", virtual_devices: bool) -> Exclusion | None:
    """Why a step's difference must not become advice; None if it may."""
    if emulated(step.on_row) or emulated(step.off_row):
        return Exclusion("emulated CPUs",
                         "the guests ran on QEMU's TCG (KVM was not usable), which translates "
                         "every guest instruction in software, so the rates measure the "
                         "emulator, not the offload; run the plan where KVM works")
    for row in (step.on_row, step.off_row):
        if overloaded(row):
            worst = max(s.loss_percent or 0.0 for s in row.samples)
            if row.case.traffic.mode == "capacity":
                return Exclusion("capacity not verified",
                                 f"{row.profile.name}'s verification trial at the capacity found "
                                 f"still lost up to {worst:.1f}% of its UDP datagrams (bound "
                                 f"{row.case.traffic.loss_percent:g}%) after its steps down: the "
                                 "figure is the rate of a trial that did not pass, so no effect "
                                 "is read from it (the loss's cause is in the capacity table)")
            return Exclusion("overloaded",
                             f"{row.profile.name} lost up to {worst:.1f}% of its UDP datagrams "
                             f"(bound {row.case.traffic.loss_percent:g}%): the receiver did not "
                             "keep up, and what the rate measures is how sender and receiver "
                             "contend for the cores, not an offload; measure UDP with "
                             "udp_rate = \"capacity\" instead")
    for row in (step.on_row, step.off_row):
        judged = capacity_verdict(row)  # verified runs, CV, socket-buffer bound (capacity_limits.py)
        if judged is not None and not judged.advisable:
            return Exclusion("capacity not advisable", f"{row.profile.name}'s UDP capacity: {judged.reason}")
        short = below_pace(row)
        if short is not None:
            offered, carried = short
            return Exclusion("not below capacity",
                             f"{row.profile.name} was paced at {offered:.3g} Gbit/s and carried "
                             f"{carried:.3g}: at its capacity, so its CPU per Gbit/s is a saturated "
                             "figure, not a service demand; lower [service_demand] percent")
    for row in (step.on_row, step.off_row):
        fragmented = fragmentation(row)
        if fragmented is not None:
            return Exclusion("IP-fragmented",
                             f"{row.profile.name}'s datagrams did not fit the path's MTU: "
                             f"{fragmented.text()}, each fragment a packet of its own and "
                             "reassembled by the receiver, so the rates measure IP "
                             "fragmentation and reassembly, not the datagram path; size the "
                             "datagrams to the path (over VXLAN at MTU 1500: 1422 bytes of payload)")
    for row in (step.on_row, step.off_row):
        dropped = drops_where_none_belong(row)
        if dropped is not None:
            share = f" ({dropped.share:.2%} of its segments)" if dropped.share is not None else ""
            retrans = (f", retransmitting {dropped.retrans_pct.mean:.2g}% of its segments"
                       if dropped.retrans_pct is not None else "")
            return Exclusion("drops on the path",
                             f"{row.profile.name} dropped packets inside a host — "
                             f"{dropped.where()}{share}{retrans}: its TCP rate was set by loss "
                             "recovery, not by the offload, so the difference is set apart "
                             "whichever way it points; find why that queue overflows (see "
                             "“Drops and retransmits on the path”)")
    if not virtual_devices:
        return None
    credited = set(step.credited)
    if step.protocol == "udp" and credited and credited <= TCP_ONLY | {TX_CSUM, GSO}:
        if credited & TCP_ONLY:
            return Exclusion("a veth property",
                             f"{display_list(step.credited)} segments only TCP; on veth, turning "
                             "it off moves the pair to its NAPI/GRO transmit path, which is what "
                             "changed the UDP rate — a NIC has no such coupling")
    wire = step.on_row.case.topology.get("wire")
    if credited and credited <= RECEIVER and wire != MTU_WIRE:
        return Exclusion("a veth property",
                         f"the sender's 64 KiB super-packets cross the veth whole, so "
                         f"{display_list(step.credited)} at the receiver had nothing to work on; "
                         "measure receiver offloads with wire = \"mtu\" (MTU frames on the "
                         "wire, as from a NIC)")
    return None


def contention(step: "Step", effects: list["Effect"]) -> Exclusion | None:
    """Why a local step whose effect goes against the mechanism is not advice; None if
    none does."""
    contrary = [e for e in effects if against_mechanism(e)]
    if not contrary:
        return None
    features = display_list(step.credited)
    what = " and ".join(
        f"{'throughput' if e.metric == 'throughput' else e.step.group.cpu_metric} "
        f"{format_change(e.keep_on)} ({format_p(e.keep_on.welch.p_value)})"
        for e in contrary)
    return Exclusion("against the mechanism",
                     f"with {features} on, {what}, yet {mechanism(step.credited)}. A gain "
                     "from doing more work per packet comes from something else; on one "
                     "machine, where sender, receiver and the lab's devices share the cores, "
                     f"most likely from how they share them, not from {features}; measure it "
                     "on real hosts (offlab run --hosts) to see whether it holds")
