"""The userspace datapath's settings as offload-profile features, and the profiles of
the `userspace` plan (seed 004: GRO none / kernel / engine, GSO none / kernel / engine /
TSO pass-through, and a direct veth pair as the reference).

A profile names datapath settings as prefixed features next to plain ethtool ones:

* ``fwd.mode.<pass|csum|gso|gro>`` — offlab-fwd's mode (exactly one true);
* ``port.a.<offload>`` / ``port.b.<offload>`` — what port A (the sending VM's tap) and
  port B (the receiving VM's tap, or the AF_PACKET veth towards the host) negotiate:
  ``csum``, ``tso4``, ``tso6``, ``ecn``, ``uso``, and ``port.b.napi`` (IFF_NAPI on a
  tap, so the kernel's GRO runs on the frames the forwarder writes into it);
* ``veth.direct`` — no forwarder: a veth pair joins the two namespaces directly.

Features without a prefix are ethtool features set inside the namespaces as always.
The mapping from seed 004's modes to these settings is tabled in docs/methodology.md
("Userspace datapath (offlab-fwd)").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Protocol, Sequence

from .fwd import MODES, PORT_OFFLOADS, TUNNEL_OFFLOADS
from .offloads import GRO, GSO
from .records import OffloadProfile

KEYS = frozenset({"datapath"})
"""Plan key: which studies' profiles to add (see STUDIES)."""
MODE = "fwd.mode."
PORT = "port."
DIRECT = "veth.direct"
PREFIXES = (MODE, PORT, "veth.")

TSO = ("csum", "tso4", "tso6", "ecn")
MTU_ONLY = ("csum",)
"""Partial checksums accepted, no segmentation: the port carries MTU-size frames."""


@dataclass(frozen=True)
class PortSettings:
    offloads: frozenset[str]
    napi: bool = False


@dataclass(frozen=True)
class Datapath:
    """What a profile asks of the userspace datapath."""

    direct: bool
    mode: str
    a: PortSettings
    b: PortSettings


def is_datapath_feature(name: str) -> bool:
    return name.startswith(PREFIXES)


def ethtool_features(features: Mapping[str, bool]) -> dict[str, bool]:
    return {k: v for k, v in features.items() if not is_datapath_feature(k)}


def datapath_of(profile: OffloadProfile) -> Datapath:
    """The datapath a profile asks for; a profile naming no datapath feature gets the
    forwarder in pass mode with MTU-size ports (nothing offloaded)."""
    features = profile.features
    if features.get(DIRECT, False):
        return Datapath(True, "pass", PortSettings(frozenset()), PortSettings(frozenset()))
    modes = [m for m in MODES if features.get(MODE + m, False)]
    if len(modes) > 1:
        raise ValueError(f"profile {profile.name!r} asks for modes {modes}; give exactly one")
    return Datapath(False, modes[0] if modes else "pass", _port(features, "a"), _port(features, "b"))


def _port(features: Mapping[str, bool], role: str) -> PortSettings:
    prefix = f"{PORT}{role}."
    if not any(k.startswith(prefix) for k in features):
        return PortSettings(frozenset(MTU_ONLY))
    offloads = frozenset(o for o in PORT_OFFLOADS if features.get(prefix + o, False))
    return PortSettings(offloads, features.get(prefix + "napi", False))


def _profile(name: str, mode: str, a: Sequence[str], b: Sequence[str], *, napi: bool = False,
             gso: bool = True, gro: bool = False) -> OffloadProfile:
    """Every datapath setting named explicitly, so the read-back records what was asked."""
    features: dict[str, bool] = {MODE + m: m == mode for m in MODES}
    for role, offloads in (("a", a), ("b", b)):
        # Tunnel offloads are the topology's to add (tunnelled paths only), not a profile's.
        features.update({f"{PORT}{role}.{o}": o in offloads
                         for o in PORT_OFFLOADS if o not in TUNNEL_OFFLOADS})
    features[f"{PORT}b.napi"] = napi
    features[GSO] = gso
    features[GRO] = gro
    return OffloadProfile(name, "both", features)


DIRECT_PROFILE = OffloadProfile("veth-direct", "both", {DIRECT: True})
"""The reference: the same two namespaces joined by a veth pair, every offload on."""

PROFILES = {
    # GSO study (VM → out): who cuts the VM's super-packets into MTU frames.
    "none": _profile("none", "pass", MTU_ONLY, MTU_ONLY, gso=False),
    "kernel-gso": _profile("kernel-gso", "pass", MTU_ONLY, MTU_ONLY),
    "engine-gso": _profile("engine-gso", "gso", TSO, MTU_ONLY),
    "tso-pass": _profile("tso-pass", "pass", TSO, TSO, gro=True),
    # GRO study (MTU frames → VM): who merges them before the receiving stack.
    "kernel-gro": _profile("kernel-gro", "pass", MTU_ONLY, MTU_ONLY, napi=True, gro=True),
    "engine-gro": _profile("engine-gro", "gro", MTU_ONLY, TSO),
}
"""GRO "none" is `kernel-gso`: MTU frames (cut by the sending namespace's GSO)
forwarded as they are, with no GRO anywhere on the way; measured once, shown in both
studies."""

STUDIES: dict[str, tuple[str, ...]] = {
    "direct": ("veth-direct",),
    "gso": ("none", "kernel-gso", "engine-gso", "tso-pass"),
    "gro": ("kernel-gso", "kernel-gro", "engine-gro"),
}
GRO_NONE = "kernel-gso"


def study_profiles(studies: Sequence[str]) -> list[OffloadProfile]:
    """The studies' profiles, each once, in a fixed order (the reference first)."""
    names: dict[str, None] = {}
    for study, members in STUDIES.items():
        if study in studies:
            names.update(dict.fromkeys(members))
    return [DIRECT_PROFILE if n == DIRECT_PROFILE.name else PROFILES[n] for n in names]


class Checker(Protocol):
    """The parts of plan._Checker the expansion uses."""

    def choices(self, key: str, allowed: list[Any], default: list[Any] | None = None) -> list[Any]: ...

    def fail(self, key: str, problem: str) -> Exception: ...


def expand(check: Checker, scenarios: Sequence[str], datapath_scenarios: set[str]) -> list[OffloadProfile]:
    """Profiles for a plan's `datapath` key (none without it); every scenario of such a
    plan must have a userspace datapath."""
    studies = check.choices("datapath", list(STUDIES), default=[])
    if not studies:
        return []
    plain = [s for s in scenarios if s not in datapath_scenarios]
    if plain:
        raise check.fail("datapath", f"scenarios {plain} have no userspace datapath; "
                                     f"use {sorted(datapath_scenarios)}")
    return study_profiles(studies)
