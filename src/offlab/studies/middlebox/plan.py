"""The middlebox plan's axes: the offload matrix on the router and the traffic paths.

Seed 003 toggled three checkboxes on a routing VM (checksum, TSO, LRO) in every
combination and measured each direction through the router (forwarded) and to/from
the router itself (terminated). Here each checkbox is a set of ethtool features on R's
two interfaces, all 2ⁿ combinations are profiles (the combination is the case's
parameters: checksum, tso, gro = true/false), and each path × router is one topology
(topology parameters path and router).

R is either the kernel (routing) or offlab-fwd (bridging its two veth ends in
userspace; forwarder.py maps each combination to the forwarder's setting). offlab-fwd
only forwards, so it has only the forwarded paths (A→B, B→A).

Plan keys: `paths` (default a-b, b-a, a-r, r-a), `matrix` (dimensions), `router`
(kernel and/or offlab-fwd; default kernel).
"""

from __future__ import annotations

from itertools import product
from typing import Sequence

from ...hosts.offloads import GRO, RX_CSUM, TSO, TX_CSUM
from ...records import OffloadProfile, Params
from ...topology.middlebox import PATHS, Path
from ..base import PlanCheck, Profile, Variant

FAMILY = "middlebox"
LRO = "large-receive-offload"
KERNEL, FWD = "kernel", "offlab-fwd"
ROUTERS = (KERNEL, FWD)
DIMENSIONS: dict[str, tuple[str, ...]] = {
    "checksum": (TX_CSUM, RX_CSUM),
    "tso": (TSO,),
    "gro": (GRO, LRO),
}
"""Matrix dimension → the ethtool features it switches together. "gro" stands for the
seed's LRO checkbox: on veth LRO is `[fixed] off`, which the read-back records."""
SHORT = {"checksum": "chk", "tso": "tso", "gro": "gro"}
DEFAULT_PATHS = ("a-b", "b-a", "a-r", "r-a")
"""Both forwarded directions, and A's traffic to and from R."""


def router_paths(router: str) -> list[Path]:
    """The paths a router has: the forwarder has no address of its own to end traffic."""
    return [p for p in PATHS.values() if router == KERNEL or p.forwarded]


def label(path: Path, router: str) -> str:
    """The variant's name for people: `middlebox-ab`, `middlebox-fwd-ab`."""
    return f"{FAMILY}-{'fwd-' if router == FWD else ''}{path.sender}{path.receiver}"


def combination(params: Params) -> dict[str, bool]:
    """Dimension → on/off of a matrix case, in matrix order (empty for other cases)."""
    return {d: bool(params[d]) for d in DIMENSIONS if d in params}


def profile_name(combo: dict[str, bool]) -> str:
    return "-".join(f"{SHORT[d]}{'Y' if on else 'N'}" for d, on in combo.items())


def matrix_profiles(dimensions: Sequence[str]) -> list[Profile]:
    """Every on/off combination of the dimensions, in the seed's row order (first
    dimension slowest, Y before N): all on first, all off last. Profiles name every
    feature explicitly so the read-back records what was asked."""
    profiles = []
    for states in product((True, False), repeat=len(dimensions)):
        combo = dict(zip(dimensions, states))
        features = {f: on for d, on in combo.items() for f in DIMENSIONS[d]}
        profiles.append(Profile(OffloadProfile(profile_name(combo), "both", features), Params(combo)))
    return profiles


def expand_scenarios(check: PlanCheck, variants: list[Variant]) -> list[Variant]:
    """`middlebox` replaced by one variant per router and path."""
    if not any(v.scenario == FAMILY for v in variants):
        for key in ("paths", "router"):
            if key in check.doc:
                raise check.fail(key, f"only the '{FAMILY}' scenario takes '{key}'; add it to scenarios")
        return variants
    paths = check.choices("paths", list(PATHS), default=list(DEFAULT_PATHS))
    routers = check.choices("router", list(ROUTERS), default=[KERNEL])
    chosen = [(r, PATHS[p]) for r in routers for p in paths if PATHS[p] in router_paths(r)]
    for router in routers:
        if not any(r == router for r, _ in chosen):
            raise check.fail("paths", f"router '{router}' forwards only; add 'a-b' or 'b-a' to paths")
    if check.doc.get("sequences"):
        raise check.fail("sequences", f"the '{FAMILY}' scenario toggles the router's offloads "
                                      "with 'matrix'; remove 'sequences'")
    if not check.choices("matrix", list(DIMENSIONS), default=[]):
        raise check.fail("matrix", f"the '{FAMILY}' scenario needs a matrix, "
                                   f"e.g. matrix = {list(DIMENSIONS)}")
    expanded: list[Variant] = []
    for variant in variants:
        if variant.scenario != FAMILY:
            expanded.append(variant)
            continue
        expanded += [Variant(FAMILY, Params(path=p.name, router=r), label(p, r)) for r, p in chosen]
    return expanded
