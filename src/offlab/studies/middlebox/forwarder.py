"""The middlebox matrix when R is offlab-fwd: each checksum × TSO × GRO combination as
the forwarder mode and port offloads that really behave that way.

offlab-fwd bridges R's two veth ends with AF_PACKET ports. What each seed checkbox
can mean for it (see docs/fwd.md, "Modes"):

* checksum — Y: the forwarder hands checksum-partial frames on as they are (egress
  port offload `csum`); N: it completes every checksum itself (mode `csum`, egress
  offloads none).
* TSO — Y: super-packets leave R whole (egress `tso4+tso6+ecn`); N: the engine cuts
  them into MTU frames (mode `gso`, egress `csum` only).
* GRO — Y: the engine coalesces MTU frames on ingress (mode `gro`); N: it does not.

Not all eight combinations are distinct forwarder behaviours, as in the kernel:

* checksum N has no super-packets leaving (a super-packet needs a partial checksum),
  so TSO Y/N are the same forwarder; and the engine only coalesces into what the
  egress takes, so GRO Y/N are too. All four chk N rows run mode `csum`.
* checksum Y, TSO N: merging frames only to cut them again is no GRO at all, so
  GRO Y/N run the same mode `gso`.

Those rows are still measured: the same profile's ethtool features are set on R's
veths, so they differ in the kernel's GRO on R's ingress veth (before AF_PACKET reads
the frames) — a real confounder, recorded in each sample's read-back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from ...topology.fwd import MODES, PORT_OFFLOADS
from ...records import DatapathSetting, PortSetting

SUPER_PACKETS = frozenset({"csum", "tso4", "tso6", "ecn"})
"""Egress offloads of TSO Y: partial checksums and TCP super-packets of both families."""
PARTIAL_ONLY = frozenset({"csum"})
NOTHING = frozenset()


@dataclass(frozen=True)
class FwdSettings:
    """What offlab-fwd runs with for one matrix combination (both ports alike)."""

    mode: str
    offloads: frozenset[str]

    def __post_init__(self) -> None:
        if self.mode not in MODES or not self.offloads <= set(PORT_OFFLOADS):
            raise ValueError(f"not an offlab-fwd setting: {self.mode} {sorted(self.offloads)}")

    @property
    def label(self) -> str:
        """"gro, csum+tso4+tso6+ecn": mode, then the egress offloads."""
        listed = "+".join(o for o in PORT_OFFLOADS if o in self.offloads) or "none"
        return f"{self.mode}, {listed}"

    def datapath(self) -> DatapathSetting:
        """As the case's datapath setting: both ports alike."""
        port = PortSetting(self.offloads)
        return DatapathSetting(True, self.mode, (("a", port), ("b", port)))

    @classmethod
    def of(cls, datapath: DatapathSetting) -> "FwdSettings":
        """The setting a case recorded (its port "a"; both ports are alike)."""
        return cls(datapath.mode, datapath.port("a").offloads)


def fwd_settings(combo: Mapping[str, bool]) -> FwdSettings:
    """The forwarder for a matrix combination; a dimension the plan left out is on (as
    the ethtool baseline of every profile is all-on)."""
    checksum, tso, gro = (combo.get(d, True) for d in ("checksum", "tso", "gro"))
    if not checksum:
        return FwdSettings("csum", NOTHING)
    if not tso:
        return FwdSettings("gso", PARTIAL_ONLY)
    return FwdSettings("gro" if gro else "pass", SUPER_PACKETS)


def collapsed_with(combo: Mapping[str, bool]) -> list[str]:
    """Dimensions of `combo` that do not change the forwarder (see the module text)."""
    same = []
    for dim in combo:
        flipped = {**combo, dim: not combo[dim]}
        if fwd_settings(flipped) == fwd_settings(combo):
            same.append(dim)
    return same
