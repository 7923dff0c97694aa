"""Seed 000 (quick, offloads plans): offload sequences on the transmitter and the
receiver over bare links and VXLAN. Its report is the pipeline's own per-group tables
and recommendations, so it adds no section of its own.

Every sequence runs on a wire that delivers MTU-sized frames to the receiver, as a NIC
pair does (topology parameter `wire`, see topology/bare.py): veth's own wire hands the
receiver the sender's 64 KiB super-packets and flips its receive path (NAPI/GRO or
not) with the sender's TSO, so a transmitter effect measured there is a veth property.

* The transmitter's profiles run on the "nic" wire (plan key `transmitter_wire`,
  default "nic"): the sender keeps what its profile asks and a wire namespace segments
  before the receiver. `transmitter_wire = "veth-superpackets"` measures on veth's own
  wire instead, as a variant named for it ("bare-veth-superpackets").
* Plan key `receiver_wire = "mtu"`: the receiver's profiles run on the "mtu" wire (the
  sender's segmentation offloads held off), a second topology variant
  ("bare-mtu-wire") with its own all-on baseline.
"""

from __future__ import annotations

from ...records import CaseSpec, Params
from ...topology import TUNNEL_FEATURES
from ..base import PlanCheck, Profile, Study, Variant
from .plan import SEQUENCES, custom_profiles, profile_protocols, sequence_profiles

WIRE_SCENARIOS = ("bare", "vxlan", "geneve", "gre", "gretap", "ipip", "sit")
RECEIVER_SEQUENCES = ("rx", "rx-single", "rx-all-off")
NIC_WIRE = "nic"
VETH_WIRE = "veth-superpackets"


class OffloadsStudy(Study):
    name = "offloads"
    keys = frozenset({"sequences", "profiles", "receiver_wire", "transmitter_wire"})

    def scenarios(self, check: PlanCheck, variants: list[Variant]) -> list[Variant]:
        variants = [self._transmitter_variant(check, v) for v in variants]
        if self._receiver_wire(check) is None:
            return variants
        sequences = check.choices("sequences", list(SEQUENCES), default=[])
        receiver_only = all(s in RECEIVER_SEQUENCES for s in sequences) and not check.doc.get("profiles")
        out = []
        for variant in variants:
            if variant.scenario not in WIRE_SCENARIOS:
                raise check.fail("receiver_wire", f"scenario {variant.name!r} has no wire to choose; "
                                                  f"use it with {' or '.join(WIRE_SCENARIOS)}")
            if not receiver_only:
                out.append(variant)
            base = Params({k: v for k, v in variant.topology.items() if k != "wire"})
            name = variant.name.removesuffix(f"-{VETH_WIRE}")
            out.append(Variant(variant.scenario, base.with_(wire="mtu"), f"{name}-mtu-wire"))
        return out

    def _transmitter_variant(self, check: PlanCheck, variant: Variant) -> Variant:
        """The variant the transmitter's (and the shared) profiles run on: its wire."""
        wire = check.doc.get("transmitter_wire", NIC_WIRE)
        if wire not in (NIC_WIRE, VETH_WIRE):
            raise check.fail("transmitter_wire", f"{wire!r} is not known; use \"{NIC_WIRE}\" (MTU frames "
                                                 f"cut by a wire, as from a NIC) or \"{VETH_WIRE}\"")
        if variant.scenario not in WIRE_SCENARIOS or "wire" in variant.topology or check.doc.get("dut"):
            return variant  # a DUT layout (seed 002) steers the pair's cores itself: no wire hop
        name = variant.name if wire == NIC_WIRE else f"{variant.name}-{VETH_WIRE}"
        return Variant(variant.scenario, variant.topology.with_(wire=wire), name)

    def profiles(self, check: PlanCheck, variant: Variant) -> list[Profile]:
        sequences = check.choices("sequences", list(SEQUENCES), default=[])
        custom = custom_profiles(check.doc.get("profiles", []), check.fail)
        if self._receiver_wire(check) is not None:
            on_wire = variant.topology.get("wire") == "mtu"
            sequences = [s for s in sequences if (s in RECEIVER_SEQUENCES) == on_wire or s == "all-on"]
            custom = [p for p in custom if (p.side == "rx") == on_wire]
        tunnel = TUNNEL_FEATURES.get(variant.scenario, ())
        chosen = sequence_profiles(sequences, tunnel)
        # "everything of a side off" comes after the plan's own (single-off) profiles, so
        # a side's rows read from all on outwards
        widest = sequence_profiles([s for s in sequences if s.endswith("-all-off")], tunnel)
        last = [p for p in chosen if p in widest and p.features]
        chosen = [p for p in chosen if p not in last] + custom + last
        limits = profile_protocols(check.doc.get("profiles", []))
        return [Profile(p, protocols=limits.get(p.name)) for p in chosen]

    def keeps(self, case: CaseSpec) -> bool:
        """The MTU wire changes only what is segmented: a TCP stream's super-packets.
        UDP datagrams and request/response messages are one frame each either way, so
        they are measured on the plain wire only."""
        if case.topology.get("wire") != "mtu":
            return True
        return case.traffic.protocol == "tcp" and case.traffic.mode == "stream"

    @staticmethod
    def _receiver_wire(check: PlanCheck) -> str | None:
        value = check.doc.get("receiver_wire")
        if value is None or value == "as-is":
            return None
        if value != "mtu":
            raise check.fail("receiver_wire", f"{value!r} is not known; use \"mtu\" (MTU frames, "
                                              "as from a NIC) or \"as-is\" (veth's own wire)")
        return value
