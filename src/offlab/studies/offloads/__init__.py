"""Seed 000 (quick, offloads plans): offload sequences on the transmitter and the
receiver over bare links and VXLAN. Its report is the pipeline's own per-group tables
and recommendations, so it adds no section of its own.

Plan key `receiver_wire = "mtu"`: the receiver's profiles are measured on a topology
whose wire carries MTU-sized frames (topology parameter `wire`, see topology/bare.py),
as from a NIC pair, while the transmitter's keep veth's own wire: a receiver offload
has something to work on only if the frames arrive as a NIC delivers them. The two
wires are two topology variants ("bare" and "bare-mtu-wire"), each with its own all-on
baseline.
"""

from __future__ import annotations

from ...records import CaseSpec
from ...topology import TUNNEL_FEATURES
from .. import PlanCheck, Profile, Study, Variant
from .plan import SEQUENCES, custom_profiles, profile_protocols, sequence_profiles

WIRE_SCENARIOS = ("bare", "vxlan", "geneve", "gre", "gretap", "ipip", "sit")
RECEIVER_SEQUENCES = ("rx", "rx-single", "rx-all-off")


class OffloadsStudy(Study):
    name = "offloads"
    keys = frozenset({"sequences", "profiles", "receiver_wire"})

    def scenarios(self, check: PlanCheck, variants: list[Variant]) -> list[Variant]:
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
            out.append(Variant(variant.scenario, variant.topology.with_(wire="mtu"), f"{variant.name}-mtu-wire"))
        return out

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
