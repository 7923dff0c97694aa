"""`qemu`: real guests on virtio-net (seed 000's VM-to-VM rows, seed 004's QEMU guest).

    vm2vm:           guest A ⇄ backend ⇄ [n1: bridge] ⇄ backend ⇄ guest B
    vm2vm, vxlan:    guest A ⇄ backend ⇄ [n1: bridge ⇄ vxlan] ⇄ underlay veth ⇄
                     [n2: vxlan ⇄ bridge] ⇄ backend ⇄ guest B
    vm2host:         guest A ⇄ backend ⇄ [n1: bridge, the host's address on it]
    vm2host, vxlan:  guest A ⇄ backend ⇄ [n1: bridge ⇄ vxlan] ⇄ underlay ⇄ [n2: vxlan ⇄
                     bridge, the host's address on it]

A node (n1, n2) is a namespace standing for a hypervisor host: a Linux bridge joins its
guests' backends, and on the vxlan paths a VXLAN device (VNI 42) over the underlay veth,
whose MTU leaves room for the 50 bytes of encapsulation, so the guests keep the case's
MTU (the hypervisor encapsulates, as in seed 000; the guests see plain Ethernet).

A backend joins a guest's virtio-net to its node:
* tap — QEMU's own virtio in userspace, over a TAP it opens in the node;
* tap-vhost — the same TAP with the kernel's vhost-net moving the rings;
* vhost-user — offlab-fwd as the vhost-user backend (the engine between the guest and
  the node): on vm2vm without overlay one forwarder joins the two guests directly;
  otherwise each guest's forwarder joins it to a TAP in its node's bridge.

The guests boot with the topology (QEMU fixes a device's features at start) from the
image `make guest` builds; the lab drives them through their console agent
(hosts/guest.py). Cores: guest A's QEMU on the sender core, guest B's (and every
forwarder) on the receiver core; inside each single-vCPU guest iperf3 runs on vCPU 0.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import ClassVar

from .. import vm
from .fwd import PortSpec
from ..hosts import Host, LocalNamespace
from ..hosts.guest import GuestHost
from ..hosts.naming import device_name
from ..hosts.offloads import Interface
from ..records import GUEST_ENTRY, TCG, DatapathSetting, FeatureState, Params, PortSetting
from ..runscope import RUNTIME_ROOT
from ..vm.profile import virtio_options
from .base import Endpoint, Topology, TopologyError
from .forwarder import ForwarderComponent

BRIDGE = device_name("br")
UNDERLAY_1, UNDERLAY_2 = device_name("u1"), device_name("u2")
VXLAN_DEV = device_name("vx")
GUEST_TAP = {"a": device_name("ga"), "b": device_name("gb")}
"""The TAP QEMU opens for a guest (tap, tap-vhost)."""
FWD_TAP = {"a": device_name("fa"), "b": device_name("fb")}
"""The TAP a guest's forwarder opens in its node (vhost-user)."""
ADDRESS = {"a": "10.214.0.1", "b": "10.214.0.2"}
MAC = {"a": "52:54:00:0f:1a:0a", "b": "52:54:00:0f:1a:0b"}
UNDERLAY_ADDRESS = ("10.215.0.1", "10.215.0.2")
PREFIXLEN = 24
VNI, DSTPORT, VXLAN_OVERHEAD = 42, 4789, 50
GUEST_DEVICE = "eth0"
GUEST_CORE = 0
"""The guests have one vCPU each."""
TAP_OFFLOADS = frozenset({"csum", "tso4", "tso6", "ecn"})
RECORDED_FEATURES = (*vm.features.SEGMENTATION_FROM_GUEST, *vm.features.SEGMENTATION_TO_GUEST,
                     "MRG_RXBUF", "VERSION_1", "RING_EVENT_IDX", "RING_INDIRECT_DESC")
"""The negotiated virtio features a sample records per guest (offloads and the rings'
features that change how frames cross)."""
"""A forwarder's TAP into a node is offered what a NIC with TSO would take."""


class GuestPath(Topology):
    scenario: ClassVar[str] = "qemu"

    def __init__(self, mtu: int, params: Params | None = None, **options: object):
        super().__init__(mtu, params, **options)  # type: ignore[arg-type]
        p = self.params
        self.path = str(p.get("path", "vm2vm"))
        self.overlay = str(p.get("overlay", "none"))
        self.backend = str(p.get("backend", "tap"))
        self.virtio_profile = str(p.get("virtio", "all-on"))
        self.fwd_mode = str(p.get("fwd", "pass"))
        if self.path not in ("vm2vm", "vm2host") or self.overlay not in ("none", "vxlan"):
            raise TopologyError(f"qemu: unknown path {self.path!r} or overlay {self.overlay!r}")
        self.guests: dict[str, vm.Guest] = {}
        self.guest_hosts: dict[str, GuestHost] = {}
        self.forwarders: dict[str, ForwarderComponent] = {}
        self._sockets = Path(RUNTIME_ROOT / f"run-{os.getpid()}")

    # --- building ---------------------------------------------------------------------

    def _build(self) -> None:
        if self.backend == "tap-vhost" and not os.path.exists(vm.profile.VHOST_NET):
            raise TopologyError(f"qemu: backend tap-vhost needs {vm.profile.VHOST_NET}, which this host "
                                "lacks (CONFIG_VHOST_NET); use backend tap or vhost-user")
        try:
            image = vm.find_image()
        except vm.GuestImageMissing as missing:
            raise TopologyError(f"qemu: {missing}") from None
        self.n1 = self.add_host("n1")
        self._bridge(self.n1)
        self.node = {"a": self.n1}
        if self.overlay == "vxlan":
            self.n2 = self.add_host("n2")
            self._bridge(self.n2)
            self.link(self.n1, UNDERLAY_1, self.n2, UNDERLAY_2, UNDERLAY_ADDRESS, PREFIXLEN,
                      mtu=self.mtu + VXLAN_OVERHEAD)
            for host, (local, remote) in ((self.n1, UNDERLAY_ADDRESS), (self.n2, UNDERLAY_ADDRESS[::-1])):
                host.add_vxlan(VXLAN_DEV, VNI, local, remote, DSTPORT, udp_csum=True)
                self._enslave(host, VXLAN_DEV)
            self.node["b"] = self.n2
        else:
            self.node["b"] = self.n1
        if self.path == "vm2host":
            self.node["b"].add_address(BRIDGE, ADDRESS["b"], PREFIXLEN)
        roles = ("a", "b") if self.path == "vm2vm" else ("a",)
        self._start_forwarders(roles)
        self._boot_guests(roles, image)

    def _bridge(self, node: LocalNamespace) -> None:
        node.ip("link", "add", BRIDGE, "type", "bridge")
        node.set_link(BRIDGE, mtu=self.mtu)

    def _enslave(self, node: LocalNamespace, device: str) -> None:
        node.ip("link", "set", "dev", device, "master", BRIDGE)
        self.set_mtu(node, device, self.mtu)

    def _socket(self, role: str) -> str:
        directory = self._sockets if self._sockets.is_dir() else Path("/tmp")
        return str(directory / f"ofl-vhost-{os.getpid()}-{role}.sock")

    def _start_forwarders(self, roles: tuple[str, ...]) -> None:
        """vhost-user: the backends listen before their guests connect."""
        if self.backend != "vhost-user":
            return
        if roles == ("a", "b") and self.overlay == "none":
            ports = {"a": PortSpec("vhost-user", self._socket("a"), ""),
                     "b": PortSpec("vhost-user", self._socket("b"), "")}
            self._forwarder("ab", ports)
            return
        for role in roles:
            ports = {"a": PortSpec("vhost-user", self._socket(role), ""),
                     "b": PortSpec("tap", FWD_TAP[role], self.node[role].namespace, TAP_OFFLOADS)}
            self._forwarder(role, ports)
            self._enslave(self.node[role], FWD_TAP[role])

    def _forwarder(self, name: str, ports: dict[str, PortSpec]) -> None:
        component = ForwarderComponent(f"qemu ({name})", self.receiver_core)
        self.forwarders[name] = component
        component.start(self._fwd_setting(), ports)

    def _fwd_setting(self) -> DatapathSetting:
        return DatapathSetting(True, self.fwd_mode, (("a", PortSetting()), ("b", PortSetting(TAP_OFFLOADS))))

    def _boot_guests(self, roles: tuple[str, ...], image: vm.GuestImage) -> None:
        """Launch every guest, then wait for each: two TCG guests boot in about the
        time of one when they boot side by side."""
        features = vm.DeviceFeatures(**virtio_options(self.virtio_profile))
        for role in roles:
            nic = vm.NicProfile(
                backend=self.backend, features=features, mac=MAC[role],
                tap=GUEST_TAP[role] if self.backend != "vhost-user" else None,
                socket=self._socket(role) if self.backend == "vhost-user" else None,
            )
            spec = vm.GuestSpec(role, nic, f"{ADDRESS[role]}/{PREFIXLEN}", mtu=self.mtu)
            guest = vm.Guest(spec, vm.InNamespace(self.node[role], image), bridge=BRIDGE if nic.tap else None)
            self.guests[role] = guest  # first: a failed launch still stops its QEMU
            guest.launch()
        for role in roles:
            guest = self.guests[role]
            guest.wait_ready()
            _pin(guest.pid, self.sender_core if role == "a" else self.receiver_core)
            self.guest_hosts[role] = GuestHost(role, guest)

    # --- what the runner reads --------------------------------------------------------

    @property
    def sender(self) -> Endpoint:
        return Endpoint("sender", self.guest_hosts["a"], ADDRESS["a"], GUEST_CORE)

    @property
    def receiver(self) -> Endpoint:
        if self.path == "vm2host":
            return Endpoint("receiver", self.node["b"], ADDRESS["b"], self.receiver_core)
        return Endpoint("receiver", self.guest_hosts["b"], ADDRESS["b"], GUEST_CORE)

    @property
    def roles(self) -> dict[str, int]:
        roles = super().roles
        if self.forwarders:
            roles["forwarder"] = self.receiver_core
        return roles

    def cpu_machines(self) -> dict[str, Host]:
        """This machine's cores: the guests' vCPU threads, QEMU, vhost and the
        forwarders all run on them."""
        return {"": self.n1}

    def inner_cpu_hosts(self) -> dict[str, Host]:
        return dict(self.guest_hosts)

    def window_threads(self) -> dict[str, tuple[tuple[int, int], ...]]:
        groups: dict[str, tuple[tuple[int, int], ...]] = {}
        for role, guest in self.guests.items():
            for kind, threads in vm.qemu_threads(guest.pid).items():  # vcpu, vhost, other
                # A vhost kernel thread (older kernels) is a process of its own.
                groups[f"qemu-{role}:{kind}"] = tuple(
                    (guest.pid if Path(f"/proc/{guest.pid}/task/{t.tid}").exists() else t.tid, t.tid)
                    for t in threads)
        return groups

    def counter_hosts(self) -> dict[str, Host]:
        return {**self.hosts, **{f"guest-{r}": h for r, h in self.guest_hosts.items()}}

    def offload_interfaces(self) -> list[Interface]:
        """The guests' virtio-net devices (their drivers' offloads); on vm2host the
        receiving host's first device on the path."""
        found = [Interface("tx", self.guest_hosts["a"], GUEST_DEVICE)]
        if self.path == "vm2vm":
            found.append(Interface("rx", self.guest_hosts["b"], GUEST_DEVICE))
        else:
            found.append(Interface("rx", self.node["b"], self._host_facing_device()))
        return found

    def _host_facing_device(self) -> str:
        if self.overlay == "vxlan":
            return VXLAN_DEV
        return FWD_TAP["a"] if self.backend == "vhost-user" else GUEST_TAP["a"]

    def apply_datapath(self, setting: DatapathSetting | None) -> dict[str, dict[str, FeatureState]]:
        """Nothing to put in place (the guests booted with their devices); the state in
        force: the accelerator, the backend, each guest's negotiated virtio features
        read inside it, and each forwarder's mode and ports."""
        if setting is not None:
            raise TopologyError(f"qemu: the datapath is the topology's (backend, fwd mode), not a case's ({setting.label})")
        requested = virtio_options(self.virtio_profile)
        accel = next(iter(self.guests.values())).accel
        state: dict[str, dict[str, FeatureState]] = {
            GUEST_ENTRY: {TCG: FeatureState(accel == "tcg"), "accel.kvm": FeatureState(accel == "kvm"),
                              **{f"backend.{b}": FeatureState(b == self.backend, requested=b == self.backend)
                                 for b in vm.profile.BACKENDS}},
        }
        for role, guest in self.guests.items():
            negotiated = set(vm.read_guest_nic(guest).virtio)
            state[f"virtio:{role}"] = {name.lower(): FeatureState(name in negotiated,
                                                                  requested=requested.get(name.lower()))
                                       for name in RECORDED_FEATURES}
        for name, component in self.forwarders.items():
            for label, entry in component.state(self._fwd_setting()).items():
                state[f"{label}@{name}" if label != "fwd" else f"fwd@{name}"] = entry
        return state

    def datapath_counters(self) -> dict[str, float]:
        grown: dict[str, float] = {}
        for name, component in self.forwarders.items():
            grown.update({k.replace("fwd:", f"fwd@{name}:", 1): v for k, v in component.counters().items()})
        return grown

    def teardown(self) -> None:
        """Guests first (QEMU holds the TAPs and the vhost-user connections), then the
        forwarders, then the namespaces."""
        try:
            for guest in self.guests.values():
                guest.stop()
            self.guest_hosts.clear()
            for component in self.forwarders.values():
                component.stop()
        finally:
            self.guests.clear()
            self.forwarders.clear()
            super().teardown()


def _pin(pid: int, core: int) -> None:
    """Every thread of a QEMU on one host core (threads it starts later inherit it)."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            os.sched_setaffinity(int(task.name), {core})
        except ProcessLookupError:
            pass  # a worker that ended meanwhile
