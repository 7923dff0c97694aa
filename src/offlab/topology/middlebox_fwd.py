"""`middlebox-fwd-ab` / `-ba`: A ⇄ R ⇄ B with R as offlab-fwd instead of a routing
kernel. R's two veth ends carry no address and R does no IP forwarding; the forwarder
bridges them with two AF_PACKET ports, so A and B share one L2 segment:

    A ofl-ar0 10.204.0.1 ─── ofl-ar1 [AF_PACKET ⇄ offlab-fwd ⇄ AF_PACKET] ofl-rb0 ─── ofl-rb1 10.204.0.2 B

The matrix combination of a profile becomes the forwarder's mode and port offloads
(fwdmatrix.py); the forwarder is restarted for each profile (`apply_datapath`), and
the same profile's ethtool features are set on R's two veths as for the kernel router
(GRO there is the kernel's GRO before AF_PACKET reads the frames).

Cores: as with the kernel router, the forwarding work is on the sender's core — the
forwarder is pinned there, and R's veths receive there; the receiver's node receives
on the receiver core.
"""

from __future__ import annotations

from functools import partial

from ..fwd import PORT_OFFLOADS, Forwarder, FwdConfig, PortSpec, counters, delta, port_roles
from ..fwdmatrix import FwdSettings, fwd_settings
from ..matrix import FWD, Path, combo_of, router_paths, scenario_name
from ..offloads import Interface
from ..proc import in_netns, run
from ..records import FeatureState, OffloadProfile
from .base import Builder, Host
from .middlebox import AR_R, RB_R, ROUTER_SIDE, ThreeNodes

ADDRESSES = {"a": "10.204.0.1", "b": "10.204.0.2"}
FWD_LABEL = "fwd"
"""Offload-state entry of the forwarder's mode (ports get one entry each)."""
DEFAULT_COMBO = {"checksum": True, "tso": True, "gro": True}
"""A profile that is no matrix combination runs the forwarder as all-on does."""


class FwdMiddlebox(ThreeNodes):
    scenario = "middlebox-fwd"

    def __init__(self, mtu: int, *, path: Path, forwarder_core: int | None = None, **options: object):
        super().__init__(mtu, **options)  # type: ignore[arg-type]
        if not path.forwarded:
            raise ValueError(f"offlab-fwd as R only forwards; path {path.name} ends on R")
        self.path = path
        self.scenario = scenario_name(path, FWD)  # type: ignore[misc]
        self.forwarder_core = self.sender_core if forwarder_core is None else forwarder_core
        self.ns: dict[str, str] = {}
        self.fwd: Forwarder | None = None
        self._ports: dict[str, str] = {}
        self._last_counters: dict[str, float] = {}

    def _build(self) -> None:
        self._build_nodes()
        # R's own kernel stays silent on the segment it bridges (no IPv6 autoconf, no
        # router solicitations the forwarder would carry).
        run(in_netns(self.ns["r"], ["sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1"]))
        self._prepare_ends()

    def _address(self, node: str, faces: str) -> str | None:
        return ADDRESSES.get(node)  # A and B share one segment; R's ports carry no address

    # --- the forwarder of a profile ----------------------------------------------------

    def apply_datapath(self, profile: OffloadProfile) -> dict[str, dict[str, FeatureState]]:
        """(Re)start the forwarder as the profile's combination asks; its state in force."""
        settings = fwd_settings(combo_of(profile) or DEFAULT_COMBO)
        self._stop()
        ports = tuple(PortSpec("packet", dev, self.ns["r"], settings.offloads) for dev in (AR_R, RB_R))
        config = FwdConfig(settings.mode, ports, self.forwarder_core)  # type: ignore[arg-type]
        self.fwd = Forwarder(config).start()
        self._ports = port_roles(self.fwd.ready, ("a", "b"))
        self._last_counters = {}
        return self._state(settings)

    def _state(self, asked: FwdSettings) -> dict[str, dict[str, FeatureState]]:
        """"fwd": mode.<m> per mode; "packet:<dev>": the egress offloads as offlab-fwd
        reports them in force, each with what the combination asked."""
        assert self.fwd is not None
        mode = self.fwd.ready.get("mode")
        state = {FWD_LABEL: {f"mode.{m}": FeatureState(m == mode, requested=m == asked.mode)
                             for m in ("pass", "csum", "gso", "gro")}}
        reported = {str(p.get("port", "")).split("@")[0]: p for p in self.fwd.ready.get("ports", [])}
        for port in self.fwd.config.ports:
            in_force = set(str(reported.get(port.label, {}).get("offloads", "")).split("+"))
            state[port.label] = {o: FeatureState(o in in_force, requested=o in asked.offloads)
                                 for o in PORT_OFFLOADS}
        return state

    def datapath_counters(self) -> dict[str, float]:
        """The forwarder's counters that grew since the previous call ("fwd:a>b:segments"
        …) and its own CPU over the same span ("fwd:usr_pct", "fwd:sys_pct")."""
        if self.fwd is None:
            return {}
        now = counters(self.fwd.snapshot(), self._ports)
        grown = delta(self._last_counters, now)
        self._last_counters = now
        grown.update({f"fwd:{k}": v for k, v in self.fwd.cpu_since_last().items()})
        return grown

    def _stop(self) -> None:
        if self.fwd is not None:
            fwd, self.fwd = self.fwd, None
            fwd.stop()

    # --- what the runner reads ----------------------------------------------------------

    def _host(self, role: str, node: str) -> Host:
        return Host(role, self.ns[node], ADDRESSES[node], self.node_core(node))

    @property
    def sender(self) -> Host:
        return self._host("sender", self.path.sender)

    @property
    def receiver(self) -> Host:
        return self._host("receiver", self.path.receiver)

    @property
    def roles(self) -> dict[str, int]:
        return {**super().roles, "forwarder": self.forwarder_core}

    def offload_interfaces(self) -> list[Interface]:
        return [Interface(ROUTER_SIDE, self.ns["r"], AR_R), Interface(ROUTER_SIDE, self.ns["r"], RB_R)]

    def teardown(self) -> None:
        """The forwarder first (its sockets hold R's veths), then the namespaces."""
        try:
            self._stop()
        finally:
            super().teardown()


def builders() -> dict[str, Builder]:
    """`middlebox-fwd-ab`, `middlebox-fwd-ba`."""
    return {scenario_name(p, FWD): partial(FwdMiddlebox, path=p) for p in router_paths(FWD)}
