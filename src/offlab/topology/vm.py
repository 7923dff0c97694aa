"""`vm2vm` and `vm2host` (and their `-vxlan` variants): two namespaces joined through
offlab-fwd, the userspace datapath, as a hypervisor's virtio backend would join them.

    vm2vm:    nsA ofl-ta ⇄ offlab-fwd ⇄ ofl-tb nsB                (two TAPs)
    vm2host:  nsA ofl-ta ⇄ offlab-fwd ⇄ AF_PACKET ofl-hm [nsM] ⇄ veth ⇄ ofl-hb nsB

nsA ("the VM") sends, nsB receives. The forwarder creates the TAPs itself inside the
namespaces, so every profile (re)starts it with that profile's mode and port offloads
(`apply_datapath`) and the addresses are assigned after it is up. The profile
`veth-direct` replaces the forwarder by a veth pair ofl-da ⇄ ofl-db between the same
namespaces and addresses: the reference of the pass-through goal, in the same run.

The `-vxlan` variants put a VXLAN device (VNI 42) in nsA and nsB over that underlay;
traffic runs between the inner addresses, so the forwarder sees VXLAN frames.

Cores: sender core 0, receiver core 1, the forwarder pinned to the receiver's core by
default (role "forwarder"). Receive processing of a device is steered (RPS) to its
host's core when that is not the forwarder's, so ACKs are handled on the sender's core.
"""

from __future__ import annotations

import time
from typing import ClassVar, Mapping

from pyroute2 import NetNS

from ..datapath import Datapath, datapath_of
from ..fwd import (PORT_OFFLOADS, TUNNEL_OFFLOADS, Forwarder, FwdConfig, FwdError, PortSpec, counters, delta,
                   port_roles)
from ..offloads import Interface
from ..proc import in_netns, run
from ..records import FeatureState, OffloadProfile
from .base import Builder, Host, Topology, TopologyError
from .naming import device_name

TAP_A, TAP_B = device_name("ta"), device_name("tb")
HOST_PORT, HOST_DEV = device_name("hm"), device_name("hb")
"""vm2host: the veth end the forwarder's AF_PACKET socket uses, and its peer in nsB."""
DIRECT_A, DIRECT_B = device_name("da"), device_name("db")
VXLAN_A, VXLAN_B = device_name("vxa"), device_name("vxb")
A_ADDR, B_ADDR = "10.211.0.1", "10.211.0.2"
INNER_A, INNER_B = "10.212.0.1", "10.212.0.2"
PREFIXLEN = 24
VNI, DSTPORT, VXLAN_OVERHEAD = 42, 4789, 50
DEVICE_GONE_TIMEOUT_S = 3.0
FWD_LABEL = "fwd"


class VmPath(Topology):
    """Base of the four scenarios; `to_host` and `tunnel` choose the variant."""

    scenario: ClassVar[str] = "vm2vm"
    to_host: ClassVar[bool] = False
    datapath: ClassVar[bool] = True
    """Marks scenarios whose profiles may name datapath features (see datapath.py)."""

    def __init__(self, mtu: int, *, forwarder_core: int | None = None, **options: object):
        super().__init__(mtu, **options)  # type: ignore[arg-type]
        self.forwarder_core = self.receiver_core if forwarder_core is None else forwarder_core
        self.fwd: Forwarder | None = None
        self.path: Datapath | None = None
        self._ports: dict[str, str] = {}
        self._last_counters: dict[str, float] = {}

    # --- building ---------------------------------------------------------------------

    def _build(self) -> None:
        self.a_ns = self.add_namespace("a")
        self.b_ns = self.add_namespace("b")
        if self.to_host:
            self.m_ns = self.add_namespace("m")
            with NetNS(self.m_ns) as ns:
                ns.link("add", ifname=HOST_PORT, kind="veth",
                        peer={"ifname": HOST_DEV, "net_ns_fd": self.b_ns})
            self._configure(self.m_ns, HOST_PORT, None)
            self._configure(self.b_ns, HOST_DEV, B_ADDR)
        # Start on the direct pair: the receiver's address exists before iperf3 binds it.
        self._connect(datapath_of(OffloadProfile("veth-direct", "both", {"veth.direct": True})))
        if self.steer_rx_softirq:
            # Registers the direct pair (and nsB's host veth) for NAPI pinning; the TAPs
            # are steered by RPS each time the forwarder recreates them.
            self.steer_receive(self.b_ns, DIRECT_B, self.receiver_core)
            self.steer_receive(self.a_ns, DIRECT_A, self.sender_core)
            if self.to_host:
                self.steer_receive(self.b_ns, HOST_DEV, self.receiver_core)

    def _configure(self, namespace: str, device: str, address: str | None, mtu: int | None = None) -> None:
        with NetNS(namespace) as ns:
            index = _index(ns, device)
            ns.link("set", index=index, mtu=mtu or self.mtu)
            if address is not None:
                ns.addr("add", index=index, address=address, prefixlen=PREFIXLEN)
            ns.link("set", index=index, state="up")

    def _add_vxlan(self, namespace: str, device: str, local: str, remote: str, inner: str) -> None:
        with NetNS(namespace) as ns:
            ns.link("add", ifname=device, kind="vxlan", vxlan_id=VNI, vxlan_local=local,
                    vxlan_group=remote, vxlan_port=DSTPORT, vxlan_udp_csum=1)
        self._configure(namespace, device, inner, mtu=self.mtu - VXLAN_OVERHEAD)

    # --- the datapath of a profile ----------------------------------------------------

    def apply_datapath(self, profile: OffloadProfile) -> dict[str, dict[str, FeatureState]]:
        """Put the profile's datapath in place (forwarder restarted, or the direct pair)
        and return its state in force as offload-state entries."""
        path = datapath_of(profile)
        self._disconnect()
        self._connect(path)
        return self._state(path, profile)

    def _connect(self, path: Datapath) -> None:
        self.path = path
        if path.direct:
            if self.to_host:
                self._host_address(present=False)
            with NetNS(self.a_ns) as ns:
                ns.link("add", ifname=DIRECT_A, kind="veth",
                        peer={"ifname": DIRECT_B, "net_ns_fd": self.b_ns})
            self._configure(self.a_ns, DIRECT_A, A_ADDR)
            self._configure(self.b_ns, DIRECT_B, B_ADDR)
            self._rps(self.a_ns, DIRECT_A, self.sender_core)
            self._rps(self.b_ns, DIRECT_B, self.receiver_core)
        else:
            self._start_forwarder(path)
        for namespace in (self.a_ns, self.b_ns):
            # The other end's device was recreated with a new MAC (nsB's host veth
            # stays): forget what was learnt about the old one.
            run(in_netns(namespace, ["ip", "neigh", "flush", "all"]), check=False)
        if self.tunnel:
            self._add_vxlan(self.a_ns, VXLAN_A, A_ADDR, B_ADDR, INNER_A)
            self._add_vxlan(self.b_ns, VXLAN_B, B_ADDR, A_ADDR, INNER_B)

    def _start_forwarder(self, path: Datapath) -> None:
        if self.to_host:
            self._host_address(present=True)
            port_b = PortSpec("packet", HOST_PORT, self.m_ns, path.b.offloads)
        else:
            port_b = PortSpec("tap", TAP_B, self.b_ns, self._tap_offloads(path.b.offloads), path.b.napi)
        port_a = PortSpec("tap", TAP_A, self.a_ns, self._tap_offloads(path.a.offloads))
        try:
            self.fwd = Forwarder(FwdConfig(path.mode, (port_a, port_b), self.forwarder_core)).start()
        except FwdError as err:  # missing binary, refused arguments: one line for the CLI
            raise TopologyError(f"{self.scenario}: {err}") from err
        self._ports = port_roles(self.fwd.ready)
        self._last_counters = {}
        self._configure(self.a_ns, TAP_A, A_ADDR)
        self._rps(self.a_ns, TAP_A, self.sender_core)
        if not self.to_host:
            self._configure(self.b_ns, TAP_B, B_ADDR)
            self._rps(self.b_ns, TAP_B, self.receiver_core)

    def _host_address(self, present: bool) -> None:
        """nsB's address lives on the host veth while the forwarder runs, on the direct
        pair otherwise (never on both: two routes to one subnet)."""
        with NetNS(self.b_ns) as ns:
            index = _index(ns, HOST_DEV)
            has = any(a.get_attr("IFA_ADDRESS") == B_ADDR for a in ns.get_addr(index=index))
            if present and not has:
                ns.addr("add", index=index, address=B_ADDR, prefixlen=PREFIXLEN)
            elif not present and has:
                ns.addr("del", index=index, address=B_ADDR, prefixlen=PREFIXLEN)

    def _disconnect(self) -> None:
        if self.fwd is not None:
            fwd, self.fwd = self.fwd, None
            fwd.stop()
            _wait_gone(self.a_ns, TAP_A)
            if not self.to_host:
                _wait_gone(self.b_ns, TAP_B)
        doomed = [(self.a_ns, DIRECT_A)] if self.path is not None and self.path.direct else []
        if self.tunnel:
            # A VXLAN device keeps state about its underlay (cached routes, learnt
            # remotes) that went stale with it: it is recreated over every new one.
            doomed += [(self.a_ns, VXLAN_A), (self.b_ns, VXLAN_B)]
        for namespace, device in doomed:
            with NetNS(namespace) as ns:
                found = ns.link_lookup(ifname=device)
                if found:
                    ns.link("del", index=found[0])
        self.path = None

    def _rps(self, namespace: str, device: str, core: int) -> None:
        """Receive processing of `device` on `core` unless that is the forwarder's own."""
        if not self.steer_rx_softirq or (self.fwd is not None and core == self.forwarder_core):
            return
        path = f"/sys/class/net/{device}/queues/rx-0/rps_cpus"
        run(in_netns(namespace, ["tee", path]), input_text=f"{1 << core:x}\n")

    def _tap_offloads(self, offloads: frozenset[str]) -> frozenset[str]:
        """On a tunnelled path a TAP that takes TSO also takes UDP-tunnel segmentation
        (with the outer checksum, as the VXLAN devices use one), so "TSO" means the same
        thing on both kinds of path: the VM's super-packets cross the forwarder whole."""
        if self.tunnel and offloads & {"tso4", "tso6"}:
            return offloads | set(TUNNEL_OFFLOADS)
        return offloads

    def _state(self, path: Datapath, profile: OffloadProfile) -> dict[str, dict[str, FeatureState]]:
        """The datapath in force, as offload-state entries: "fwd" (mode or direct pair)
        and one entry per forwarder port (offloads negotiated, as it reports them)."""
        asked = profile.features
        if path.direct:
            return {FWD_LABEL: {"veth.direct": FeatureState(True, requested=asked.get("veth.direct"))}}
        assert self.fwd is not None
        mode = self.fwd.ready.get("mode")
        state = {FWD_LABEL: {f"mode.{m}": FeatureState(m == mode, requested=asked.get(f"fwd.mode.{m}"))
                             for m in ("pass", "csum", "gso", "gro")}}
        for role, port in zip(("a", "b"), self.fwd.config.ports):
            reported = next((p for p in self.fwd.ready.get("ports", []) if p.get("port", "").startswith(port.label + "@")), {})
            in_force = set(str(reported.get("offloads", "")).split("+"))
            entry = {o: FeatureState(o in in_force, requested=_requested(asked, port, role, o))
                     for o in PORT_OFFLOADS}
            if port.kind == "tap":
                entry["napi"] = FeatureState(port.napi, requested=asked.get(f"port.{role}.napi"))
            state[port.label] = entry
        return state

    def datapath_counters(self) -> dict[str, float]:
        """The forwarder's counters that grew since the previous call (or its start),
        "fwd:a>b:merged_packets" …, and its own CPU over the same span."""
        if self.fwd is None:
            return {}
        try:
            now = counters(self.fwd.snapshot(), self._ports)
        except FwdError as err:
            raise TopologyError(f"{self.scenario}: {err}") from err
        grown = delta(self._last_counters, now)
        self._last_counters = now
        grown.update({f"fwd:{k}": v for k, v in self.fwd.cpu_since_last().items()})
        return grown

    # --- what the runner reads --------------------------------------------------------

    @property
    def sender(self) -> Host:
        return Host("sender", self.a_ns, INNER_A if self.tunnel else A_ADDR, self.sender_core)

    @property
    def receiver(self) -> Host:
        return Host("receiver", self.b_ns, INNER_B if self.tunnel else B_ADDR, self.receiver_core)

    @property
    def roles(self) -> dict[str, int]:
        roles = super().roles
        if self.fwd is not None:
            roles["forwarder"] = self.forwarder_core
        return roles

    def offload_interfaces(self) -> list[Interface]:
        """nsA's and nsB's devices on the current path (and the VXLAN devices)."""
        if self.path is not None and self.path.direct:
            a_dev, b_dev = DIRECT_A, DIRECT_B
        else:
            a_dev, b_dev = TAP_A, HOST_DEV if self.to_host else TAP_B
        found = [Interface("tx", self.a_ns, a_dev), Interface("rx", self.b_ns, b_dev)]
        if self.tunnel:
            found = [Interface("tx", self.a_ns, VXLAN_A), found[0],
                     Interface("rx", self.b_ns, VXLAN_B), found[1]]
        return found

    def teardown(self) -> None:
        """The forwarder first (it holds the TAPs), then the namespaces."""
        try:
            if self.fwd is not None:
                fwd, self.fwd = self.fwd, None
                fwd.stop()
        finally:
            super().teardown()


def _requested(asked: Mapping[str, bool], port: PortSpec, role: str, offload: str) -> bool | None:
    """What was asked of a port offload: by the profile, or for the tunnel offloads by
    the topology itself (see `_tap_offloads`)."""
    if offload in TUNNEL_OFFLOADS:
        return offload in port.offloads
    return asked.get(f"port.{role}.{offload}")


def _index(ns: NetNS, device: str) -> int:
    found = ns.link_lookup(ifname=device)
    if not found:
        raise TopologyError(f"device {device} not found")
    return found[0]


def _wait_gone(namespace: str, device: str) -> None:
    """A TAP is unregistered as its last file closes; wait so its name is free again."""
    deadline = time.monotonic() + DEVICE_GONE_TIMEOUT_S
    while time.monotonic() < deadline:
        with NetNS(namespace) as ns:
            if not ns.link_lookup(ifname=device):
                return
        time.sleep(0.01)
    raise TopologyError(f"{device} in {namespace} still exists after the forwarder stopped")


def _variant(name: str, to_host: bool, tunnel: bool) -> type[VmPath]:
    return type(f"Vm_{name.replace('-', '_')}", (VmPath,),
                {"scenario": name, "to_host": to_host, "tunnel": tunnel})


VM_SCENARIOS: dict[str, type[VmPath]] = {
    name: _variant(name, to_host, tunnel)
    for name, to_host, tunnel in (
        ("vm2vm", False, False), ("vm2host", True, False),
        ("vm2vm-vxlan", False, True), ("vm2host-vxlan", True, True),
    )
}


def builders() -> dict[str, Builder]:
    return dict(VM_SCENARIOS)
