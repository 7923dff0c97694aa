"""Comparing offload states in force, and naming features the way people say them."""

from __future__ import annotations

from typing import Iterable, Mapping

from ..records import FeatureState

OffloadState = Mapping[str, Mapping[str, FeatureState]]

UMBRELLAS = {
    "tx-checksumming": (
        "tx-checksum-ipv4", "tx-checksum-ip-generic", "tx-checksum-ipv6",
        "tx-checksum-fcoe-crc", "tx-checksum-sctp",
    ),
    "tcp-segmentation-offload": (
        "tx-tcp-segmentation", "tx-tcp-ecn-segmentation", "tx-tcp-mangleid-segmentation",
        "tx-tcp6-segmentation", "tx-tcp-accecn-segmentation",
    ),
    "scatter-gather": ("tx-scatter-gather", "tx-scatter-gather-fraglist"),
}
"""ethtool's umbrella names → the kernel features they switch together. A sub-feature
changing with its umbrella is the same change, not a cascade."""

DISPLAY_NAMES = {
    "tcp-segmentation-offload": "TSO",
    "generic-segmentation-offload": "GSO",
    "generic-receive-offload": "GRO",
    "large-receive-offload": "LRO",
    "tx-checksumming": "Tx checksumming",
    "rx-checksumming": "Rx checksumming",
    "tx-udp-segmentation": "UDP segmentation (USO)",
    "rx-gro-list": "GRO fraglist",
    "rx-udp-gro-forwarding": "UDP GRO forwarding",
}


def display_name(feature: str) -> str:
    return DISPLAY_NAMES.get(feature, feature)


def display_list(features: Iterable[str]) -> str:
    """"TSO", "TSO and GSO", "TSO, GSO and Tx checksumming"."""
    names = [display_name(f) for f in features]
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


def changed_features(
    before: Mapping[str, FeatureState], after: Mapping[str, FeatureState]
) -> set[str]:
    """Features present in both whose state in force differs, sub-features folded into
    their umbrella when the umbrella changed too."""
    changed = {
        name for name, state in after.items()
        if name in before and before[name].on != state.on
    }
    for umbrella, subs in UMBRELLAS.items():
        if umbrella in changed:
            changed.difference_update(subs)
    return changed


def side_ifaces(state: OffloadState, side: str) -> list[str]:
    """Interface labels ("tx:ofl-v0") belonging to a side; "both" means all."""
    return [iface for iface in state if side == "both" or iface.startswith(f"{side}:")]


def side_changes(before: OffloadState, after: OffloadState, side: str) -> set[str]:
    """Features whose state in force changed on any of the side's interfaces."""
    out: set[str] = set()
    for iface in side_ifaces(after, side):
        out |= changed_features(before.get(iface, {}), after[iface])
    return out


def known_features(state: OffloadState, side: str) -> dict[str, bool]:
    """feature → whether it is [fixed] on any of the side's interfaces."""
    out: dict[str, bool] = {}
    for iface in side_ifaces(state, side):
        for name, feat in state[iface].items():
            out[name] = out.get(name, False) or feat.fixed
    return out


def umbrella(feature: str) -> str:
    """The ethtool umbrella a kernel feature belongs to ("tx-tcp-segmentation" → TSO's
    "tcp-segmentation-offload"), or the feature itself."""
    return next((name for name, subs in UMBRELLAS.items() if feature in subs), feature)
