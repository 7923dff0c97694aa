"""Offload features: a pure parser of `ethtool -k`, the features the lab toggles,
and setting a profile on real interfaces with the state actually in force read back
(the seed plan's sequences of profiles are the offloads study's: studies/offloads).

A feature the kernel would not change (`[fixed]`), or one that another change turned
off with it (a cascade: no tx checksumming → no TSO), is a fact of the run: it is
recorded as read back, never treated as an error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Mapping, Sequence

from ..records import FeatureState, OffloadProfile

if TYPE_CHECKING:
    from . import Host

# ethtool -k names of the features the seed plan toggles.
TSO = "tcp-segmentation-offload"
TX_CSUM = "tx-checksumming"
GSO = "generic-segmentation-offload"
UDP_TNL = "tx-udp_tnl-segmentation"
GRO = "generic-receive-offload"
RX_CSUM = "rx-checksumming"

USO = "tx-udp-segmentation"
"""UDP segmentation offload: the device cuts a UDP_SEGMENT send into datagrams."""
UDP_GRO_FWD = "rx-udp-gro-forwarding"
"""GRO for UDP not bound for a UDP_GRO socket (forwarded, or tunnelled); off by default."""

TUNNEL_SEGMENTATION = ("tx-udp_tnl-csum-segmentation", "tx-gre-segmentation", "tx-gre-csum-segmentation",
                       "tx-ipxip4-segmentation", "tx-ipxip6-segmentation", "tx-sit-segmentation")
"""Segmentation offloads of the other tunnel kinds (topology/tunnel.py), beside UDP_TNL."""
TOGGLED = (TSO, TX_CSUM, GSO, UDP_TNL, GRO, RX_CSUM) + TUNNEL_SEGMENTATION
"""Everything a profile may switch; "all on" switches all of them on everywhere (a
device without a feature simply has nothing to switch)."""
BASELINE = {**{name: True for name in TOGGLED}, USO: True, UDP_GRO_FWD: False}
"""The state every case starts from before its profile: the toggled features on, and
the UDP ones at the kernel's defaults (USO on, UDP GRO forwarding off), so a UDP profile
of one case does not outlive it."""

RECORDED = TOGGLED + (
    "scatter-gather",
    "tx-checksum-ip-generic",
    "tx-tcp-segmentation",
    "tx-udp-segmentation",
    "rx-gro-list",
    "rx-udp-gro-forwarding",
)
"""Features stored with every sample: the toggled ones plus those that cascade with them."""

@dataclass(frozen=True)
class EthtoolFeature:
    on: bool
    fixed: bool = False
    requested_on: bool | None = None
    """Set when ethtool shows `[requested on]`/`[requested off]`: the wanted state differs
    from the one in force (a dependency keeps it from changing)."""


@dataclass(frozen=True)
class FeatureListing:
    features: Mapping[str, EthtoolFeature]
    malformed: tuple[str, ...] = ()
    """One reason per line that could not be parsed (kept, counted, never fatal)."""


def parse_features(text: str) -> FeatureListing:
    """Parse `ethtool -k DEV` output: `name: on|off [fixed|requested on|requested off]`."""
    features: dict[str, EthtoolFeature] = {}
    malformed: list[str] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("Features for "):
            continue
        name, sep, rest = line.partition(":")
        words = rest.split()
        if not sep or not name or not words or words[0] not in ("on", "off"):
            malformed.append(f"line {number}: not 'feature: on|off' ({raw!r})")
            continue
        qualifier = " ".join(words[1:])
        fixed = qualifier == "[fixed]"
        requested = {"[requested on]": True, "[requested off]": False}.get(qualifier)
        if qualifier and not fixed and requested is None:
            malformed.append(f"line {number}: unknown qualifier {qualifier!r}")
            continue
        features[name.strip()] = EthtoolFeature(words[0] == "on", fixed, requested)
    return FeatureListing(features, tuple(malformed))


# --- applying to interfaces ------------------------------------------------------------

@dataclass(frozen=True)
class Interface:
    """A device whose offloads a profile controls, on the host it lives on."""

    side: str
    """"tx", "rx" (which end of the traffic it belongs to) or "router"."""
    host: "Host"
    device: str
    pinned: Mapping[str, bool] = field(default_factory=dict)
    """Features the topology holds in a state whatever the profile asks (the MTU wire:
    the sender's segmentation offloads off, so the wire carries MTU frames)."""
    baseline: Mapping[str, bool] | None = None
    """What a profile starts from on this device: None is all on; a real host's
    `baseline = "as-configured"` gives its features as the operator left them."""

    @property
    def label(self) -> str:
        return f"{self.side}:{self.device}"


@dataclass
class OffloadControl:
    """Sets features with `ethtool -K` on the interface's host and reads them back."""

    malformed_lines: int = 0
    refused: list[str] = field(default_factory=list)
    """`ethtool -K` calls the kernel refused outright (the read-back records the result)."""

    def read(self, iface: Interface) -> dict[str, EthtoolFeature]:
        out = iface.host.run(["ethtool", "-k", iface.device])
        listing = parse_features(out.stdout)
        self.malformed_lines += len(listing.malformed)
        return dict(listing.features)

    def set(self, iface: Interface, wanted: Mapping[str, bool]) -> None:
        """Ask for `wanted`; features that are fixed, absent or already right are skipped."""
        current = self.read(iface)
        changes: list[str] = []
        for name, on in wanted.items():
            feature = current.get(name)
            if feature is None or feature.fixed or feature.on == on:
                continue
            changes += [name, "on" if on else "off"]
        if not changes:
            return
        done = iface.host.set_features(iface.device, changes)
        if done.returncode != 0:
            self.refused.append(f"{iface.label}: {' '.join(changes)}: {done.stderr.strip()}")

    def apply(
        self, profile: OffloadProfile, interfaces: Sequence[Interface]
    ) -> dict[str, dict[str, FeatureState]]:
        """Put every interface in the profile's state; return what is actually in force."""
        for iface in interfaces:
            wanted = dict(BASELINE)
            if iface.baseline is not None:  # "as-configured": the operator's own state
                wanted.update({name: on for name, on in iface.baseline.items() if name in BASELINE})
            if _targets(profile, iface):
                wanted.update(profile.features)
            wanted.update(iface.pinned)
            self.set(iface, wanted)
        return {iface.label: self.state(iface, profile) for iface in interfaces}

    def state(self, iface: Interface, profile: OffloadProfile) -> dict[str, FeatureState]:
        asked = {**(profile.features if _targets(profile, iface) else {}), **iface.pinned}
        features = self.read(iface)
        return {
            name: FeatureState(on=f.on, fixed=f.fixed, requested=asked.get(name))
            for name, f in features.items()
            if name in RECORDED or name in asked
        }


def _targets(profile: OffloadProfile, iface: Interface) -> bool:
    return profile.side in ("both", iface.side)
