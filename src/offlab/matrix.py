"""The middlebox plan's two axes: the offload matrix on the router and the traffic paths.

Seed 003 toggled three checkboxes on a routing VM (checksum, TSO, LRO) in every
combination and measured each direction through the router (forwarded) and to/from the
router itself (terminated). Here each checkbox is a set of ethtool features on R's two
interfaces, all 2ⁿ combinations are profiles, and each path is its own scenario name
(`middlebox-ab` = A→B through R), so a case key names its path and two result sets
match path by path.

R is either the kernel (routing) or offlab-fwd (bridging its two veth ends in
userspace, see fwdmatrix.py); the plan's `router` key chooses, and a forwarder
scenario is named `middlebox-fwd-ab`. offlab-fwd only forwards, so it has only the
forwarded paths (A→B, B→A).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product
from typing import Any, Iterable, Protocol, Sequence

from .offloads import GRO, RX_CSUM, TSO, TX_CSUM
from .records import OffloadProfile

FAMILY = "middlebox"
"""The plan scenario that expands into one scenario per path."""
LRO = "large-receive-offload"
KERNEL, FWD = "kernel", "offlab-fwd"
ROUTERS = {KERNEL: "", FWD: "fwd-"}
"""Router → the infix of its scenario names (`middlebox-ab`, `middlebox-fwd-ab`)."""

DIMENSIONS: dict[str, tuple[str, ...]] = {
    "checksum": (TX_CSUM, RX_CSUM),
    "tso": (TSO,),
    "gro": (GRO, LRO),
}
"""Matrix dimension → the ethtool features it switches together. "gro" stands for the
seed's LRO checkbox: on veth LRO is `[fixed] off`, which the read-back records."""
SHORT = {"checksum": "chk", "tso": "tso", "gro": "gro"}


@dataclass(frozen=True)
class Path:
    """One direction of traffic between two of the nodes A, R, B."""

    sender: str
    receiver: str

    @property
    def name(self) -> str:
        return f"{self.sender}-{self.receiver}"

    @property
    def scenario(self) -> str:
        """The kernel router's scenario for this path (see `scenario_name`)."""
        return f"{FAMILY}-{self.sender}{self.receiver}"

    @property
    def forwarded(self) -> bool:
        """Crosses R (A↔B) rather than ending or starting on it."""
        return "r" not in (self.sender, self.receiver)

    @property
    def label(self) -> str:
        """As the seed's column headers: "A -> B", "R -> A"."""
        return f"{self.sender.upper()} -> {self.receiver.upper()}"


PATHS = {p.name: p for p in (Path(s, r) for s, r in
                             (("a", "b"), ("b", "a"), ("a", "r"), ("r", "a"), ("b", "r"), ("r", "b")))}
DEFAULT_PATHS = ("a-b", "b-a", "a-r", "r-a")
"""The issue's four: both forwarded directions, and A's traffic to and from R."""


def scenario_name(path: Path, router: str = KERNEL) -> str:
    return f"{FAMILY}-{ROUTERS[router]}{path.sender}{path.receiver}"


def router_paths(router: str) -> list[Path]:
    """The paths a router has: the forwarder has no address of its own to end traffic."""
    return [p for p in PATHS.values() if router == KERNEL or p.forwarded]


SCENARIO_NAMES = {scenario_name(p, r): (r, p) for r in ROUTERS for p in router_paths(r)}


def path_of(scenario: str) -> Path | None:
    """The path a middlebox scenario name stands for; None for any other scenario."""
    found = SCENARIO_NAMES.get(scenario)
    return found[1] if found else None


def router_of(scenario: str) -> str | None:
    """"kernel" or "offlab-fwd" for a middlebox scenario name; None for any other."""
    found = SCENARIO_NAMES.get(scenario)
    return found[0] if found else None


def plan_scenarios(registered: Iterable[str]) -> list[str]:
    """Scenario names a plan may list: the registered ones, with the per-path
    middlebox names folded into `middlebox` (its paths come from the `paths` key)."""
    return sorted(s for s in registered if path_of(s) is None) + [FAMILY]


def profile_name(combo: dict[str, bool]) -> str:
    return "-".join(f"{SHORT[d]}{'Y' if on else 'N'}" for d, on in combo.items())


def matrix_profiles(dimensions: Sequence[str]) -> list[OffloadProfile]:
    """Every on/off combination of the dimensions, in the seed's row order (first
    dimension slowest, Y before N): all on first, all off last. Profiles name every
    feature explicitly so the read-back records what was asked."""
    profiles = []
    for states in product((True, False), repeat=len(dimensions)):
        combo = dict(zip(dimensions, states))
        features = {f: on for d, on in combo.items() for f in DIMENSIONS[d]}
        profiles.append(OffloadProfile(profile_name(combo), "both", features))
    return profiles


def combo_of(profile: OffloadProfile) -> dict[str, bool] | None:
    """Dimension → Y/N of a matrix profile (None if it is not one)."""
    parts = profile.name.split("-")
    found = {}
    for part in parts:
        dim = next((d for d, s in SHORT.items() if part[:-1] == s), None)
        if dim is None or part[-1:] not in ("Y", "N"):
            return None
        found[dim] = part[-1] == "Y"
    return found or None


class Checker(Protocol):
    """The parts of plan._Checker the expansion uses."""

    def choices(self, key: str, allowed: list[Any], default: list[Any] | None = None) -> list[Any]: ...

    def fail(self, key: str, problem: str) -> Exception: ...

    @property
    def doc(self) -> dict[str, Any]: ...


def expand(check: Checker, scenarios: list[str], has_sequences: bool) -> tuple[list[str], list[OffloadProfile]]:
    """A plan's scenarios with `middlebox` replaced by one scenario per router and path,
    and the matrix profiles (none when the plan has no `matrix` key)."""
    dims = check.choices("matrix", list(DIMENSIONS), default=[])
    if FAMILY not in scenarios:
        for key in ("paths", "router"):
            if key in check.doc:
                raise check.fail(key, f"only the '{FAMILY}' scenario takes '{key}'; add it to scenarios")
        return scenarios, matrix_profiles(dims) if dims else []
    paths = check.choices("paths", list(PATHS), default=list(DEFAULT_PATHS))
    routers = check.choices("router", list(ROUTERS), default=[KERNEL])
    chosen = [(r, PATHS[p]) for r in routers for p in paths if PATHS[p] in router_paths(r)]
    for router in routers:
        if not any(r == router for r, _ in chosen):
            raise check.fail("paths", f"router '{router}' forwards only; add 'a-b' or 'b-a' to paths")
    if has_sequences:
        raise check.fail("sequences", f"the '{FAMILY}' scenario toggles the router's offloads "
                                      "with 'matrix'; remove 'sequences'")
    if not dims:
        raise check.fail("matrix", f"the '{FAMILY}' scenario needs a matrix, "
                                   f"e.g. matrix = {list(DIMENSIONS)}")
    expanded: list[str] = []
    for scenario in scenarios:
        expanded += [scenario_name(p, r) for r, p in chosen] if scenario == FAMILY else [scenario]
    return expanded, matrix_profiles(dims)
