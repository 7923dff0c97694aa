"""Seed 000's offload sequences as profiles, and a plan's own `[[profiles]]`.

Plan keys: `sequences` (some of tx, rx, tx-single, rx-single, tx-all-off, rx-all-off,
all-on, udp) and `[[profiles]]` tables (name, side, off). The sequences are the seed
plan's: on the transmitter TSO off → + tx checksumming off → + GSO off (on a tunnel the
last step also turns tx-udp_tnl-segmentation off), on the receiver GRO off → + rx
checksumming off, cumulative with "all on" first; or each feature off alone; or only the
last step (every feature of the side off: the seed's "offloads off"), which a plan pairs
with single-off `[[profiles]]` to attribute each feature's effect from its own profile.
The `udp` sequence is today's UDP offloads, which the seed plan predates: USO
(tx-udp-segmentation) off at the sender, and UDP GRO forwarding (rx-udp-gro-forwarding,
off by default) on at the receiver — measured with udpload traffic, whose sender uses
UDP_SEGMENT and receiver UDP_GRO (plan traffic "udp1472-gso" against "udp1472-plain").
"""

from __future__ import annotations

from typing import Iterable, Sequence

from ...hosts.offloads import GRO, GSO, RX_CSUM, TOGGLED, TSO, TX_CSUM, UDP_GRO_FWD, UDP_TNL, USO
from ...records import OffloadProfile

SEQUENCES = ("tx", "rx", "tx-single", "rx-single", "tx-all-off", "rx-all-off", "all-on", "udp")
ALL_ON = "all-on"
PROFILE_KEYS = {"name", "side", "off", "protocols"}
PROTOCOLS = ("tcp", "udp")
_SHORT = {TSO: "tso", TX_CSUM: "txcsum", GSO: "gso", UDP_TNL: "udptnl", GRO: "gro", RX_CSUM: "rxcsum"}


def all_on() -> OffloadProfile:
    """The shared baseline of both sequences: every toggled feature on, on both sides."""
    return OffloadProfile(ALL_ON, "both", {})


def _off(features: Iterable[str]) -> dict[str, bool]:
    return {f: False for f in features}


def _cumulative(side: str, steps: Sequence[Sequence[str]]) -> list[OffloadProfile]:
    profiles, off = [], []
    for step in steps:
        off.extend(step)
        name = "+".join(_SHORT[f] for f in off if f in _SHORT and f != UDP_TNL) + "-off"
        profiles.append(OffloadProfile(name, side, _off(off)))  # type: ignore[arg-type]
    return profiles


def tx_sequence(tunnel: bool | Sequence[str]) -> list[OffloadProfile]:
    """`tunnel`: the tunnel's segmentation offloads, turned off with GSO in the last step
    (True: VXLAN's tx-udp_tnl-segmentation, as the seed's plan)."""
    features = list(_tunnel(tunnel))
    return [all_on(), *_cumulative("tx", [[TSO], [TX_CSUM], [GSO, *features]])]


def _tunnel(tunnel: bool | Sequence[str]) -> tuple[str, ...]:
    if tunnel is True:
        return (UDP_TNL,)
    return tuple(tunnel) if tunnel else ()


def rx_sequence() -> list[OffloadProfile]:
    return [all_on(), *_cumulative("rx", [[GRO], [RX_CSUM]])]


def one_off_at_a_time(side: str, tunnel: bool | Sequence[str]) -> list[OffloadProfile]:
    """Each feature of one side off alone, everything else on: isolates single effects."""
    if side == "tx":
        names = [TSO, TX_CSUM, GSO] + list(_tunnel(tunnel)[:1])
    else:
        names = [GRO, RX_CSUM]
    singles = [OffloadProfile(f"only-{_SHORT.get(f, f)}-off", side, {f: False}) for f in names]  # type: ignore[arg-type]
    return [all_on(), *singles]


def udp_profiles() -> list[OffloadProfile]:
    """All on, USO off at the sender, UDP GRO forwarding on at the receiver."""
    return [all_on(), OffloadProfile("uso-off", "tx", {USO: False}),
            OffloadProfile("udp-gro-fwd-on", "rx", {UDP_GRO_FWD: True})]


def sequence_profiles(sequences: Sequence[str], tunnel: bool | Sequence[str]) -> list[OffloadProfile]:
    """Profiles of the chosen sequences, each once ("all on" is shared by all of them)."""
    chosen: dict[tuple[str, str], OffloadProfile] = {}
    for sequence in sequences:
        if sequence == "all-on":
            found = [all_on()]  # the defaults alone (seed 002 changes nothing)
        elif sequence == "tx":
            found = tx_sequence(tunnel)
        elif sequence == "rx":
            found = rx_sequence()
        elif sequence == "udp":
            found = udp_profiles()
        elif sequence in ("tx-all-off", "rx-all-off"):
            steps = tx_sequence(tunnel) if sequence == "tx-all-off" else rx_sequence()
            found = [steps[0], steps[-1]]
        else:
            found = one_off_at_a_time(sequence.split("-")[0], tunnel)
        for profile in found:
            chosen.setdefault((profile.side, profile.name), profile)
    return list(chosen.values())


def custom_profiles(tables: object, fail) -> list[OffloadProfile]:
    """`[[profiles]]` tables → profiles; `fail(key, problem)` makes the plan's error."""
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise fail("profiles", "must be [[profiles]] tables with name, side, off")
    found = []
    for number, table in enumerate(tables, start=1):
        where = f"profiles[{number}]."
        for key in table:
            if key not in PROFILE_KEYS:
                raise fail(where + key, f"unknown key; allowed: {', '.join(sorted(PROFILE_KEYS))}")
        name, side, off = table.get("name"), table.get("side"), table.get("off")
        if not isinstance(name, str) or not name or name == ALL_ON:
            raise fail(where + "name", f"{name!r} must be a non-empty string other than 'all-on'")
        if side not in ("tx", "rx", "both"):
            raise fail(where + "side", f"{side!r} is not known; use 'tx', 'rx' or 'both'")
        if not isinstance(off, list) or not off or any(f not in TOGGLED for f in off):
            listed = ", ".join(repr(t) for t in TOGGLED)
            raise fail(where + "off", f"{off!r} must list features from {listed}")
        protocols = table.get("protocols", list(PROTOCOLS))
        if not isinstance(protocols, list) or not protocols or any(p not in PROTOCOLS for p in protocols):
            raise fail(where + "protocols", f"{protocols!r} must list some of {', '.join(PROTOCOLS)}")
        found.append(OffloadProfile(name, side, {f: False for f in off}))
    return found


def profile_protocols(tables: list[dict]) -> dict[str, frozenset[str]]:
    """name → the traffic protocols a `[[profiles]]` table limits its profile to
    (`protocols = ["tcp"]`: TSO never touches a UDP datagram, so measuring UDP with it
    off only measures the device's other transmit path). Tables are checked by
    custom_profiles first."""
    return {t["name"]: frozenset(t["protocols"]) for t in tables if "protocols" in t}
