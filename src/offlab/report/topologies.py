"""What was measured, in words: the topology behind each scenario of a run — which
"hosts" are namespaces, what joins them (veth, VXLAN over veth, TAP and offlab-fwd),
what the wire carries, and which roles share which core. A reader must know that a
local run's hosts are network namespaces on one machine before reading any figure."""

from __future__ import annotations

from typing import Iterable, Mapping

from ..hosts.facts import virtual_roles
from ..records import CaseSpec, RunSettings

LOCAL = ("Both \u201chosts\u201d are network namespaces on this one machine (kernel {kernel}, "
         "{cores} cores); no NIC is on the path, so every offload acts on virtual devices.")

SCENARIOS = {
    "bare": "a veth pair joins the sender's and the receiver's namespace, standing in for the "
            "NIC pair of the seed's baseline physical scenario",
    "vxlan": "a VXLAN tunnel (VNI 42, UDP 4789) between the two namespaces runs over a veth "
             "pair; traffic uses the inner addresses, so every packet is encapsulated on the "
             "sender and decapsulated on the receiver",
    "middlebox": "three namespaces A ⇄ R ⇄ B joined by two veth pairs; R routes in its kernel, "
                 "or bridges its two veth ends through offlab-fwd (AF_PACKET ports)",
    "vm2vm": "the sending \u201cVM\u201d namespace's TAP and the receiving one's TAP are joined "
             "by offlab-fwd, the userspace virtio backend, or by a veth pair as the reference",
    "vm2host": "the sending \u201cVM\u201d namespace's TAP is joined by offlab-fwd to an "
               "AF_PACKET port on a veth leading to the receiving namespace",
}
WIRES = {
    "mtu": "the wire carries MTU-sized frames: the sender's segmentation offloads are held off, "
           "so its stack segments each super-packet in software (GSO, on the sender's core) "
           "before the receiver's device, as a NIC pair would deliver them — the same for every "
           "receiver profile",
    "nic": "the wire carries MTU-sized frames: the sender keeps its profile's offloads and a wire "
           "namespace between the hosts (a bridge whose device towards the receiver has no TSO) "
           "cuts its super-packets to MTU frames where a NIC would, on the receiver's core; the "
           "receiver's device gets frames from a device without TSO, so its receive path "
           "(NAPI + GRO while its GRO is on) is the same in every transmitter profile. The "
           "wire's bridging and segmenting, a NIC's hardware work, share the receiver's core "
           "(on 2 cores there is no other), so a transmitter effect's CPU per Gbit/s is the "
           "sender's core, where the sender's TSO acts, and the receiver's core (its work "
           "and the wire's) is in the CPU table apart; a saturated rate is set by the "
           "busier core, which can be the receiver's because of the wire's per-packet work "
           "(the CPU table shows which)",
    None: "the wire carries the sender's super-packets whole (veth passes 64 KiB TSO/GSO "
          "packets through, and takes its NAPI/GRO receive path only when the sender's TSO is "
          "off), so the receiver's path flips with the sender's TSO: transmitter effects here "
          "are veth properties",
}
WIRES["veth-superpackets"] = WIRES[None]
CORES = ("{steering}; the sender's application runs on core 0 and the receiver's on core 1 "
         "unless the layout says otherwise (the CPU tables name each role's core)")


def describe(cases: Iterable[CaseSpec], settings: RunSettings | None, kernel: str,
             cores: int, host_facts: Mapping[str, Mapping[str, str]] | None = None) -> list[str]:
    """One sentence per scenario variant of the run, after the sentence on where."""
    if settings is not None and settings.hosts != "local":
        virtual = virtual_roles(dict(host_facts or {}))
        if virtual:
            lines = [f"Hosts reached over SSH ({settings.hosts}), but the test interface of "
                     f"{' and '.join(virtual)} is a software device, not a NIC: effects that "
                     "are properties of such devices are set apart as on the one-machine lab."]
        else:
            lines = [f"Real hosts reached over SSH ({settings.hosts}): the path is their NICs "
                     "and whatever joins them, so no effect here is a property of a virtual "
                     "device."]
        for role, facts in (host_facts or {}).items():
            lines.append(f"**{role}**: " + "; ".join(f"{k}: {v}" for k, v in facts.items()))
        return lines
    lines = [LOCAL.format(kernel=kernel, cores=cores)]
    seen: set[tuple[str, object]] = set()
    for case in cases:
        wire = case.topology.get("wire")
        key = (case.scenario_label, wire)
        if key in seen:
            continue
        seen.add(key)
        what = SCENARIOS.get(case.scenario, case.scenario)
        text = f"**{case.scenario_label}**: {what}"
        if case.scenario in ("bare", "vxlan"):
            text += f"; {WIRES.get(wire, WIRES[None])}"
        if "dut" in case.topology:
            text += ("; DUT layout: the DUT's application on one core, its softirq work on the "
                     "other, the generator sharing the application core")
        lines.append(text + ".")
    steering = ("receive processing is steered to the receiving namespace's core (RPS and a "
                "pinned NAPI thread per veth)" if settings is None or settings.steer_rx_softirq
                else "receive processing runs where veth puts it: on the sending core")
    lines.append(CORES.format(steering=steering[:1].upper() + steering[1:]) + ".")
    return lines
