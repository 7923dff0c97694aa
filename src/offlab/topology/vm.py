"""`vm2vm` and `vm2host` (and their `-vxlan` variants): two namespaces joined through
offlab-fwd, the userspace datapath, as a hypervisor's virtio backend would join them.

    vm2vm:    nsA ofl-ta ⇄ offlab-fwd ⇄ ofl-tb nsB                (two TAPs)
    vm2host:  nsA ofl-ta ⇄ offlab-fwd ⇄ AF_PACKET ofl-hm [nsM] ⇄ veth ⇄ ofl-hb nsB

nsA ("the VM") sends, nsB receives. The forwarder creates the TAPs itself inside the
namespaces, so every profile (re)starts it with that profile's mode and port offloads
(`apply_datapath`) and the addresses are assigned after it is up. A datapath setting
without a forwarder replaces it by a veth pair ofl-da ⇄ ofl-db between the same
namespaces and addresses: the reference of the pass-through mode, in the same run.

The `-vxlan` variants put a VXLAN device (VNI 42) in nsA and nsB over that underlay;
traffic runs between the inner addresses, so the forwarder sees VXLAN frames.

Cores: sender core 0, receiver core 1, the forwarder pinned to the receiver's core by
default (role "forwarder"). Receive processing of a device is steered (RPS) to its
host's core when that is not the forwarder's, so ACKs are handled on the sender's core.
"""

from __future__ import annotations

import time
from typing import ClassVar

from .fwd import TUNNEL_OFFLOADS, PortSpec
from ..hosts import LocalNamespace
from ..hosts.naming import device_name
from ..hosts.offloads import Interface
from ..records import DatapathSetting, FeatureState, Params
from .base import Endpoint, Topology, TopologyError
from .forwarder import LABEL, ForwarderComponent

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
DIRECT = DatapathSetting(forwarder=False)


class VmPath(Topology):
    """Base of the four scenarios; `to_host` and `tunnel` choose the variant."""

    scenario: ClassVar[str] = "vm2vm"
    to_host: ClassVar[bool] = False
    datapath: ClassVar[bool] = True

    def __init__(self, mtu: int, params: Params | None = None, *, forwarder_core: int | None = None,
                 **options: object):
        super().__init__(mtu, params, **options)  # type: ignore[arg-type]
        self.forwarder_core = self.receiver_core if forwarder_core is None else forwarder_core
        self.forwarder = ForwarderComponent(self.scenario, self.forwarder_core)
        self.path: DatapathSetting | None = None

    # --- building ---------------------------------------------------------------------

    def _build(self) -> None:
        self.a = self.add_host("a")
        self.b = self.add_host("b")
        if self.to_host:
            self.m = self.add_host("m")
            self.link(self.m, HOST_PORT, self.b, HOST_DEV, (None, B_ADDR), PREFIXLEN)
        # Start on the direct pair: the receiver's address exists before iperf3 binds it.
        self._connect(DIRECT)
        if self.steer_rx_softirq:
            # Registers the direct pair (and nsB's host veth) for NAPI pinning; the TAPs
            # are steered by RPS each time the forwarder recreates them.
            self.steer_receive(self.b, DIRECT_B, self.receiver_core)
            self.steer_receive(self.a, DIRECT_A, self.sender_core)
            if self.to_host:
                self.steer_receive(self.b, HOST_DEV, self.receiver_core)

    def _add_vxlan(self, host: LocalNamespace, device: str, local: str, remote: str, inner: str) -> None:
        host.add_vxlan(device, VNI, local, remote, DSTPORT, udp_csum=True)
        host.set_link(device, mtu=self.mtu - VXLAN_OVERHEAD)
        host.add_address(device, inner, PREFIXLEN)

    # --- the datapath of a case ---------------------------------------------------------

    def apply_datapath(self, setting: DatapathSetting | None) -> dict[str, dict[str, FeatureState]]:
        """Put the case's datapath in place (forwarder restarted, or the direct pair)
        and return its state in force."""
        setting = setting or DatapathSetting(True, "pass")
        self._disconnect()
        self._connect(setting)
        if not setting.forwarder:
            return {LABEL: {"veth.direct": FeatureState(True, requested=True)}}
        return self.forwarder.state(setting)

    def _connect(self, setting: DatapathSetting) -> None:
        self.path = setting
        if not setting.forwarder:
            if self.to_host:
                self._host_address(present=False)
            self.link(self.a, DIRECT_A, self.b, DIRECT_B, (A_ADDR, B_ADDR), PREFIXLEN)
            self._rps(self.a, DIRECT_A, self.sender_core)
            self._rps(self.b, DIRECT_B, self.receiver_core)
        else:
            self._start_forwarder(setting)
        for host in (self.a, self.b):
            # The other end's device was recreated with a new MAC (nsB's host veth
            # stays): forget what was learnt about the old one.
            host.ip("neigh", "flush", "all", check=False)
        if self.tunnel:
            self._add_vxlan(self.a, VXLAN_A, A_ADDR, B_ADDR, INNER_A)
            self._add_vxlan(self.b, VXLAN_B, B_ADDR, A_ADDR, INNER_B)

    def _start_forwarder(self, setting: DatapathSetting) -> None:
        a, b = setting.port("a"), setting.port("b")
        if self.to_host:
            self._host_address(present=True)
            port_b = PortSpec("packet", HOST_PORT, self.m.namespace, b.offloads)
        else:
            port_b = PortSpec("tap", TAP_B, self.b.namespace, self._tap_offloads(b.offloads), b.napi)
        port_a = PortSpec("tap", TAP_A, self.a.namespace, self._tap_offloads(a.offloads))
        self.forwarder.start(setting, {"a": port_a, "b": port_b})
        self.a.set_link(TAP_A, mtu=self.mtu)
        self.a.add_address(TAP_A, A_ADDR, PREFIXLEN)
        self._rps(self.a, TAP_A, self.sender_core)
        if not self.to_host:
            self.b.set_link(TAP_B, mtu=self.mtu)
            self.b.add_address(TAP_B, B_ADDR, PREFIXLEN)
            self._rps(self.b, TAP_B, self.receiver_core)

    def _host_address(self, present: bool) -> None:
        """nsB's address lives on the host veth while the forwarder runs, on the direct
        pair otherwise (never on both: two routes to one subnet)."""
        has = B_ADDR in self.b.addresses(HOST_DEV)
        if present and not has:
            self.b.add_address(HOST_DEV, B_ADDR, PREFIXLEN)
        elif not present and has:
            self.b.del_address(HOST_DEV, B_ADDR, PREFIXLEN)

    def _disconnect(self) -> None:
        if self.forwarder.running:
            self.forwarder.stop()
            _wait_gone(self.a, TAP_A)
            if not self.to_host:
                _wait_gone(self.b, TAP_B)
        doomed = [(self.a, DIRECT_A)] if self.path is not None and not self.path.forwarder else []
        if self.tunnel:
            # A VXLAN device keeps state about its underlay (cached routes, learnt
            # remotes) that went stale with it: it is recreated over every new one.
            doomed += [(self.a, VXLAN_A), (self.b, VXLAN_B)]
        for host, device in doomed:
            host.delete_link(device)
        self.path = None

    def _rps(self, host: LocalNamespace, device: str, core: int) -> None:
        """Receive processing of `device` on `core` unless that is the forwarder's own."""
        if not self.steer_rx_softirq or (self.forwarder.running and core == self.forwarder_core):
            return
        host.write_file(f"/sys/class/net/{device}/queues/rx-0/rps_cpus", f"{1 << core:x}\n")

    def _tap_offloads(self, offloads: frozenset[str]) -> frozenset[str]:
        """On a tunnelled path a TAP that takes TSO also takes UDP-tunnel segmentation
        (with the outer checksum, as the VXLAN devices use one), so "TSO" means the same
        thing on both kinds of path: the VM's super-packets cross the forwarder whole."""
        if self.tunnel and offloads & {"tso4", "tso6"}:
            return offloads | set(TUNNEL_OFFLOADS)
        return offloads

    def datapath_counters(self) -> dict[str, float]:
        return self.forwarder.counters()

    # --- what the runner reads --------------------------------------------------------

    @property
    def sender(self) -> Endpoint:
        return Endpoint("sender", self.a, INNER_A if self.tunnel else A_ADDR, self.sender_core)

    @property
    def receiver(self) -> Endpoint:
        return Endpoint("receiver", self.b, INNER_B if self.tunnel else B_ADDR, self.receiver_core)

    @property
    def roles(self) -> dict[str, int]:
        roles = super().roles
        if self.forwarder.running:
            roles["forwarder"] = self.forwarder_core
        return roles

    def offload_interfaces(self) -> list[Interface]:
        """nsA's and nsB's devices on the current path (and the VXLAN devices)."""
        if self.path is not None and not self.path.forwarder:
            a_dev, b_dev = DIRECT_A, DIRECT_B
        else:
            a_dev, b_dev = TAP_A, HOST_DEV if self.to_host else TAP_B
        found = [Interface("tx", self.a, a_dev), Interface("rx", self.b, b_dev)]
        if self.tunnel:
            found = [Interface("tx", self.a, VXLAN_A), found[0], Interface("rx", self.b, VXLAN_B), found[1]]
        return found

    def teardown(self) -> None:
        """The forwarder first (it holds the TAPs), then the namespaces."""
        try:
            self.forwarder.stop()
        finally:
            super().teardown()


def _wait_gone(host: LocalNamespace, device: str) -> None:
    """A TAP is unregistered as its last file closes; wait so its name is free again."""
    deadline = time.monotonic() + DEVICE_GONE_TIMEOUT_S
    while time.monotonic() < deadline:
        if not host.has_link(device):
            return
        time.sleep(0.01)
    raise TopologyError(f"{device} in {host.namespace} still exists after the forwarder stopped")


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


def builders() -> dict[str, type[Topology]]:
    return dict(VM_SCENARIOS)
