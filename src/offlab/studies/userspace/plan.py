"""The `userspace` plan's profiles (seed 004: GRO none / kernel / engine, GSO none /
kernel / engine / TSO pass-through, and a direct veth pair as the reference), each an
ethtool profile for the namespaces plus the setting of the userspace datapath:
offlab-fwd's mode and what port A (the sending VM's tap) and port B (the receiving
VM's tap, or the AF_PACKET veth towards the host) negotiate — csum, tso4, tso6, ecn,
uso, and IFF_NAPI on a tap so the kernel's GRO runs on the frames the forwarder
writes into it. UDP-tunnel offloads are the topology's to add on tunnelled paths, not
a profile's. docs/methodology.md tables the mapping from seed 004's modes.

Plan key: `datapath` — which of the studies (direct, gso, gro) to add.
"""

from __future__ import annotations

from typing import Sequence

from ...hosts.offloads import GRO, GSO
from ...records import DatapathSetting, OffloadProfile, PortSetting
from ..base import Profile

TSO = frozenset({"csum", "tso4", "tso6", "ecn"})
MTU_ONLY = frozenset({"csum"})
"""Partial checksums accepted, no segmentation: the port carries MTU-size frames."""


def _profile(name: str, mode: str, a: frozenset[str], b: frozenset[str], *, napi: bool = False,
             gso: bool = True, gro: bool = False) -> Profile:
    """GSO and GRO are named in the namespaces' ethtool features either way, so the
    read-back records what was asked."""
    setting = DatapathSetting(True, mode, (("a", PortSetting(a)), ("b", PortSetting(b, napi))))
    return Profile(OffloadProfile(name, "both", {GSO: gso, GRO: gro}), datapath=setting)


DIRECT = Profile(OffloadProfile("veth-direct", "both", {}), datapath=DatapathSetting(forwarder=False))
"""The reference: the same two namespaces joined by a veth pair, every offload on."""

PROFILES = {p.offloads.name: p for p in (
    # GSO study (VM → out): who cuts the VM's super-packets into MTU frames.
    _profile("none", "pass", MTU_ONLY, MTU_ONLY, gso=False),
    _profile("kernel-gso", "pass", MTU_ONLY, MTU_ONLY),
    _profile("engine-gso", "gso", TSO, MTU_ONLY),
    _profile("tso-pass", "pass", TSO, TSO, gro=True),
    # GRO study (MTU frames → VM): who merges them before the receiving stack.
    _profile("kernel-gro", "pass", MTU_ONLY, MTU_ONLY, napi=True, gro=True),
    _profile("engine-gro", "gro", MTU_ONLY, TSO),
    DIRECT,
)}
"""GRO "none" is `kernel-gso`: MTU frames (cut by the sending namespace's GSO)
forwarded as they are, with no GRO anywhere on the way; measured once, shown in both
studies."""

STUDIES: dict[str, tuple[str, ...]] = {
    "direct": ("veth-direct",),
    "gso": ("none", "kernel-gso", "engine-gso", "tso-pass"),
    "gro": ("kernel-gso", "kernel-gro", "engine-gro"),
}
GRO_NONE = "kernel-gso"


def study_profiles(studies: Sequence[str]) -> list[Profile]:
    """The studies' profiles, each once, in a fixed order (the reference first)."""
    names: dict[str, None] = {}
    for study, members in STUDIES.items():
        if study in studies:
            names.update(dict.fromkeys(members))
    return [PROFILES[n] for n in names]
