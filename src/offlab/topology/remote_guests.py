"""`qemu` on the user's own servers (`offlab run --hosts`): seed 000's "VM-to-VM on
different nodes" (plain and over VXLAN) and a guest to the other node itself, with
real QEMU guests started on the two servers over SSH (vm/remote.py).

    vm2vm, none:    guest A ⇄ TAP ⇄ [sender: ofl-br0 ⇄ NIC] ═ wire ═ [receiver: NIC ⇄ ofl-br0] ⇄ TAP ⇄ guest B
    vm2vm, vxlan:   guest A ⇄ TAP ⇄ [sender: ofl-br0 ⇄ ofl-vx0 over NIC] ═ wire ═ [… ofl-vx0 ⇄ ofl-br0] ⇄ TAP ⇄ guest B
    vm2host, none:  guest A ⇄ TAP ⇄ [sender: ofl-br0 ⇄ NIC] ═ wire ═ [receiver: NIC, 10.214.0.2 on it]
    vm2host, vxlan: guest A ⇄ TAP ⇄ [sender: ofl-br0 ⇄ ofl-vx0] ═ wire ═ [receiver: ofl-vx0, 10.214.0.2 on it]

The guests' segment is plain L2 on the test link: each guest has an address of its own
in 10.214.0.0/24 (guest A .1, guest B .2, the receiver itself .2 on vm2host; the hosts
file's [test_network] guest_prefix moves it), beside
the servers' own test addresses; no VLAN, nothing routed. On `none` the test interface
becomes a port of the bridge ofl-br0 (with the interface's MAC) and its addresses move
to the bridge, so the server keeps answering on its test address throughout; at the
end they move back and the interface leaves the bridge. On `vxlan` the test interface
is left unbridged: a VXLAN device (VNI 42, UDP 4789 unless
[test_network] says otherwise) over it joins the bridge, and the
interface's MTU leaves room for the 50 bytes of encapsulation, so the guests keep the
case's MTU and the NIC carries the tunnel (its tunnel offloads are in the path).

Backends: `tap` (QEMU's own virtio-net over a TAP it opens) and `tap-vhost` (the same
TAP with the kernel's vhost-net, where the server has /dev/vhost-net) join the bridge;
`vhost-user` puts offlab-fwd on the guest's server between the guest's vhost-user
socket and an AF_PACKET port on the wire's device — the test interface itself on
`none` (no bridge: the interface keeps its addresses), the VXLAN device on `vxlan` —
in the case's mode (pass, gso, gro): seed 004's guest ⇄ backend GRO/GSO ⇄ NIC. Its
binary is copied by hash (remote_fwd.py) and its process journaled like QEMU's.

Every change — bridge, TAP, VXLAN device, the interface's master, each address moved,
MTUs, QEMU's process group — is journaled (hosts/journal.py) before it is made, on
the controller and on the server, and undone at the end, on Ctrl-C/SIGTERM, by the
server's watchdog, or by `offlab restore` after a kill -9.

Cores: each QEMU pinned to its server's `app_core`; inside each one-vCPU guest iperf3
runs on vCPU 0. The guest's kernel and initramfs are copied to each server by hash
(hosts/files.py) and the accelerator is probed there (KVM or TCG, per server).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass

from .. import vm
from ..vm.profile import virtio_options
from ..hosts import changes, files
from ..hosts.guest import GuestHost
from ..hosts.hostsfile import TestNetwork
from ..hosts.session import HOST_NAMES, RemoteSession
from ..hosts.ssh import SshHost
from ..hosts.offloads import Interface
from .fwd import PortSpec
from ..records import GUEST_ENTRY, TCG, DatapathSetting, FeatureState, Params, PortSetting
from ..vm.remote import OverSsh, probe_accelerator
from .base import Endpoint, TopologyError
from .guests import GUEST_CORE, GUEST_DEVICE, MAC, RECORDED_FEATURES, VXLAN_OVERHEAD
from .forwarder import ForwarderComponent
from .remote import RemotePair
from .remote_fwd import RemoteForwarder, install_binary

SCENARIO = "qemu"
BRIDGE = "ofl-br0"
VXLAN_DEV = "ofl-vx0"
TAP = {"a": "ofl-ga", "b": "ofl-gb"}
NODE = {"a": "tx", "b": "rx"}
"""Guest A on the sender, guest B on the receiver."""
BACKENDS = ("tap", "tap-vhost", "vhost-user")
PORT_OFFLOADS = frozenset({"csum", "tso4", "tso6", "ecn"})
"""What the forwarder's AF_PACKET port on the wire is offered: a NIC with TSO."""
PARAMS = {"path", "overlay", "backend", "virtio", "fwd"}


@dataclass(frozen=True)
class NodeFacts:
    """One server as a hypervisor: its accelerator (and why) and vhost-net."""

    accel: str
    why: str
    vhost_net: bool


class RemoteGuestPath(RemotePair):
    scenario = SCENARIO  # type: ignore[assignment]

    def __init__(self, scenario: str, mtu: int, params: Params | None, session: RemoteSession,
                 **options: object):
        super().__init__(scenario, mtu, params, session, **options)
        p = self.params
        self.path, self.overlay = str(p.get("path", "vm2vm")), str(p.get("overlay", "none"))
        self.backend, self.virtio_profile = str(p.get("backend", "tap")), str(p.get("virtio", "all-on"))
        self.fwd_mode = str(p.get("fwd", "pass"))
        self.forwarders: dict[str, ForwarderComponent] = {}
        self.guests: dict[str, vm.Guest] = {}
        self.guest_hosts: dict[str, GuestHost] = {}
        self.nodes: dict[str, NodeFacts] = {}
        self._threads: dict[str, dict[str, tuple[tuple[int, int], ...]]] = {}
        self._taps: dict[str, changes.Change] = {}
        """The journal's entry of each guest's TAP (QEMU makes it, and it goes with QEMU)."""

    def _check(self, scenario: str) -> None:
        unknown = set(self.params) - PARAMS
        if unknown:
            raise TopologyError(f"qemu on real hosts takes no {', '.join(sorted(unknown))}")
        if self.params.get("path", "vm2vm") not in ("vm2vm", "vm2host") or \
                self.params.get("overlay", "none") not in ("none", "vxlan"):
            raise TopologyError(f"qemu: unknown path {self.params.get('path')!r} or overlay "
                                f"{self.params.get('overlay')!r}")
        if self.params.get("backend", "tap") not in BACKENDS:
            raise TopologyError(f"qemu on real hosts: backend {self.params.get('backend')!r}; use one of "
                                f"{', '.join(BACKENDS)}")

    # --- building ---------------------------------------------------------------------

    def _build(self) -> None:
        super()._build()  # journals, the case's MTU on both test interfaces, steering
        roles = ("a", "b") if self.path == "vm2vm" else ("a",)
        image = self._image()
        self._prepare_nodes(image)
        for name, host in self.remote.items():
            if name == "rx" and self.path == "vm2host":
                self._host_address(host)
            elif self.backend == "vhost-user":
                self._start_forwarder(name, host)
            else:
                self._bridge(host)
        self._boot(roles, image)

    def _image(self) -> vm.GuestImage:
        try:
            return vm.find_image()
        except vm.GuestImageMissing as missing:
            raise TopologyError(f"qemu: {missing}") from None

    def _prepare_nodes(self, image: vm.GuestImage) -> None:
        """On both servers at once: the guest's files copied (by hash), the accelerator
        probed, /dev/vhost-net looked for."""
        failures: list[str] = []

        def prepare(name: str, host: SshHost) -> None:
            try:
                kernel, _ = files.ensure(host, image.kernel)
                initramfs, _ = files.ensure(host, image.initramfs)
                self._remote_images[name] = vm.GuestImage(image.directory, kernel, initramfs, image.manifest)  # type: ignore[arg-type]
                identity = self.session.identities[self._role(name)]
                accel, why = probe_accelerator(host, self._remote_images[name], self._runtime(name, "probe"),
                                               f"{identity.machine_id}-{identity.boot_id}")
                vhost = host.run(["test", "-c", vm.profile.VHOST_NET], check=False).returncode == 0
                self.nodes[name] = NodeFacts(accel, why, vhost)
            except Exception as err:  # reported with the host's name below
                failures.append(f"{name} ({host.spec.ssh}): {err}")

        self._remote_images: dict[str, vm.GuestImage] = {}
        workers = [threading.Thread(target=prepare, args=item, daemon=True) for item in self.remote.items()]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        if failures:
            raise TopologyError("qemu: " + "; ".join(failures))
        if self.backend == "tap-vhost":
            lacking = [n for n, facts in self.nodes.items() if not facts.vhost_net]
            if lacking:
                raise TopologyError(f"qemu: backend tap-vhost needs {vm.profile.VHOST_NET}, which "
                                    f"{', '.join(lacking)} lacks (modprobe vhost_net there); use backend tap")

    def _runtime(self, name: str, what: str) -> str:
        """A directory of this run on the server: inside the server's hold, which goes
        with it whatever ends the run."""
        return f"{self.session.servers[self._role(name)].directory}/{what}-{name}"

    @staticmethod
    def _role(name: str) -> str:
        return next(role for role, host_name in HOST_NAMES.items() if host_name == name)

    def _bridge(self, host: SshHost) -> None:
        """ofl-br0 on `host`, joined to the wire: the test interface itself (its
        addresses moved onto the bridge) or, over VXLAN, a VXLAN device on it."""
        spec, journal = host.spec, self.journals[host.name]
        mac = host.read_file(f"/sys/class/net/{spec.interface}/address").strip()
        journal.add(changes.device(BRIDGE))
        host.ip("link", "add", BRIDGE, "address", mac, "type", "bridge")
        self.set_mtu(host, BRIDGE, self.mtu)
        if self.overlay == "vxlan":
            self._vxlan(host)
            self._enslave(host, VXLAN_DEV)
            return
        self._enslave(host, spec.interface)
        for prefix in self._global_addresses(host, spec.interface):
            journal.add(changes.address(prefix, spec.interface, BRIDGE))
            host.ip("addr", "del", prefix, "dev", spec.interface)
            host.ip("addr", "add", prefix, "dev", BRIDGE)

    def _start_forwarder(self, name: str, host: SshHost) -> None:
        """vhost-user: offlab-fwd listening on the guest's socket before QEMU connects,
        its other port AF_PACKET on the wire's device."""
        if self.overlay == "vxlan":
            self._vxlan(host)
        device = VXLAN_DEV if self.overlay == "vxlan" else host.spec.interface
        binary, _ = install_binary(host)
        directory = self._runtime(name, "vhost")
        host.run(["mkdir", "-p", directory], timeout=20)
        component = ForwarderComponent(f"qemu ({name}: offlab-fwd on {host.spec.ssh})", host.spec.app_core,
                                       make=lambda config: RemoteForwarder(host, config, binary))
        self.forwarders[name] = component
        component.start(self._fwd_setting(), {"a": PortSpec("vhost-user", f"{directory}/guest.sock", ""),
                                               "b": PortSpec("packet", device, "", PORT_OFFLOADS)})

    def _fwd_setting(self) -> DatapathSetting:
        return DatapathSetting(True, self.fwd_mode, (("a", PortSetting()), ("b", PortSetting(PORT_OFFLOADS))))

    def _vxlan(self, host: SshHost) -> None:
        spec = host.spec
        self.set_mtu(host, spec.interface, self.mtu + VXLAN_OVERHEAD)
        self.journals[host.name].add(changes.device(VXLAN_DEV))
        host.add_vxlan(VXLAN_DEV, self.net.vni, spec.address, spec.peer, self.net.vxlan_port,
                       underlay=spec.interface, udp_csum=True)
        self.set_mtu(host, VXLAN_DEV, self.mtu)

    def _enslave(self, host: SshHost, device: str) -> None:
        now = json.loads(host.ip("-j", "link", "show", "dev", device).stdout or "[{}]")[0]
        self.journals[host.name].add(changes.master(device, now.get("master", changes.NONE), BRIDGE))
        host.ip("link", "set", "dev", device, "master", BRIDGE)

    def _host_address(self, host: SshHost) -> None:
        """vm2host: the receiver's own address on the guests' segment, on the device the
        guest's frames arrive by (the test interface, or the VXLAN device over it)."""
        device = host.spec.interface
        if self.overlay == "vxlan":
            self._vxlan(host)
            device = VXLAN_DEV
        prefix = f"{self.net.guest_addresses['b']}/{self.net.guest_prefixlen}"
        self.journals[host.name].add(changes.address(prefix, changes.ABSENT, device))
        host.ip("addr", "add", prefix, "dev", device)

    @staticmethod
    def _global_addresses(host: SshHost, device: str) -> list[str]:
        shown = json.loads(host.ip("-j", "addr", "show", "dev", device).stdout or "[]")
        return [f"{a['local']}/{a['prefixlen']}" for link in shown for a in link.get("addr_info", [])
                if a.get("scope") == "global"]

    def _boot(self, roles: tuple[str, ...], image: vm.GuestImage) -> None:
        """Launch both guests, then wait for each (two boots overlap)."""
        features = vm.DeviceFeatures(**virtio_options(self.virtio_profile))
        for role in roles:
            name = NODE[role]
            host = self.remote[name]
            user = self.backend == "vhost-user"
            nic = vm.NicProfile(backend=self.backend, features=features, mac=MAC[role],
                                tap=None if user else TAP[role],
                                socket=f"{self._runtime(name, 'vhost')}/guest.sock" if user else None)
            spec = vm.GuestSpec(role, nic, f"{self.net.guest_addresses[role]}/{self.net.guest_prefixlen}",
                                mtu=self.mtu)
            if not user:
                self._taps[role] = self.journals[name].add(changes.device(TAP[role]))
            launcher = OverSsh(host, self._remote_images[name], self.nodes[name].accel,
                               self._runtime(name, f"guest-{role}"), core=host.spec.app_core,
                               accel_reason=self.nodes[name].why)
            guest = vm.Guest(spec, launcher, bridge=None if user else BRIDGE)
            self.guests[role] = guest  # first: a failed launch still stops its QEMU
            guest.launch()
        for role in roles:
            self.guests[role].wait_ready()
            self.guest_hosts[role] = GuestHost(role, self.guests[role])
            self._threads[role] = self._read_threads(self.guests[role])

    @staticmethod
    def _read_threads(guest: vm.Guest) -> dict[str, tuple[tuple[int, int], ...]]:
        """QEMU's threads on its server by class (vm/threads.py: vCPU, vhost, other),
        read there once the guest is up (its vhost worker exists by then)."""
        script = (f'for t in /proc/{guest.pid}/task/*; do printf "%s %s\\n" "${{t##*/}}" '
                  f'"$(cat "$t/comm" 2>/dev/null)"; done')
        found: dict[str, list[tuple[int, int]]] = {kind: [] for kind in vm.threads.CLASSES}
        # The script only reads (thread names are world-readable): as the SSH user.
        for line in guest.host.run(["sh", "-c", script], timeout=15, root=False).stdout.splitlines():
            tid, _, name = line.partition(" ")
            if tid.isdigit():
                found[vm.threads.classify(name, guest.pid)].append((guest.pid, int(tid)))
        return {kind: tuple(threads) for kind, threads in found.items()}

    # --- what the runner reads --------------------------------------------------------

    @property
    def sender(self) -> Endpoint:
        return Endpoint("sender", self.guest_hosts["a"], self.net.guest_addresses["a"], GUEST_CORE)

    @property
    def receiver(self) -> Endpoint:
        if self.path == "vm2host":
            host = self.remote["rx"]
            return Endpoint("receiver", host, self.net.guest_addresses["b"], host.spec.app_core)
        return Endpoint("receiver", self.guest_hosts["b"], self.net.guest_addresses["b"], GUEST_CORE)

    @property
    def roles(self) -> dict[str, int]:
        return {"sender": self.sender_core, "receiver": self.receiver_core}

    @property
    def role_hosts(self) -> dict[str, str]:
        return {"sender": "tx", "receiver": "rx"}

    def cpu_machines(self) -> dict[str, SshHost]:  # type: ignore[override]
        """Both servers' cores (the guests' vCPU threads, QEMU's I/O, vhost run there)."""
        return dict(self.remote)

    def inner_cpu_hosts(self) -> dict[str, GuestHost]:  # type: ignore[override]
        return dict(self.guest_hosts)

    def remote_window_threads(self) -> dict[str, tuple[SshHost, tuple[tuple[int, int], ...]]]:  # type: ignore[override]
        """Each QEMU's threads by class, read on its server over the measured window:
        "qemu-a:vcpu" (guest A's vCPU on the sender), "qemu-a:other" (QEMU's I/O and main
        loop), "qemu-a:vhost" (the vhost-net worker), the same for guest B."""
        return {f"qemu-{role}:{kind}": (self.guests[role].host, threads)
                for role, classes in self._threads.items() if role in self.guests
                for kind, threads in classes.items()}

    def counter_hosts(self) -> dict[str, object]:  # type: ignore[override]
        return {**self.remote, **{f"guest-{r}": h for r, h in self.guest_hosts.items()}}

    def offload_interfaces(self) -> list[Interface]:
        """Seed 000's toggles: in the guests (their virtio-net drivers) and on the
        servers' test interfaces (and VXLAN devices) — each side's together."""
        found = [Interface("tx", self.guest_hosts["a"], GUEST_DEVICE)]
        if self.path == "vm2vm":
            found.append(Interface("rx", self.guest_hosts["b"], GUEST_DEVICE))
        for name, side in (("tx", "tx"), ("rx", "rx")):
            host = self.remote[name]
            if self.overlay == "vxlan":
                found.append(Interface(side, host, VXLAN_DEV))
            found.append(Interface(side, host, host.spec.interface))
        return found

    def apply_datapath(self, setting):  # type: ignore[no-untyped-def]
        """The state in force: each server's accelerator and backend, and each guest's
        negotiated virtio features read inside it. TCG on either server marks the
        sample as emulated (nothing advised from it)."""
        if setting is not None:
            raise TopologyError(f"qemu: the datapath is the topology's (backend), not a case's ({setting.label})")
        requested = virtio_options(self.virtio_profile)
        tcg = any(self.nodes[NODE[role]].accel == "tcg" for role in self.guests)
        state: dict[str, dict[str, FeatureState]] = {
            GUEST_ENTRY: {TCG: FeatureState(tcg), "accel.kvm": FeatureState(not tcg),
                          **{f"backend.{b}": FeatureState(b == self.backend, requested=b == self.backend)
                             for b in vm.profile.BACKENDS}},
        }
        for name, facts in self.nodes.items():
            state[f"hypervisor@{name}"] = {"accel.kvm": FeatureState(facts.accel == "kvm"),
                                           "accel.tcg": FeatureState(facts.accel == "tcg"),
                                           "vhost-net": FeatureState(self.backend == "tap-vhost",
                                                                     requested=self.backend == "tap-vhost")}
        for role, guest in self.guests.items():
            negotiated = set(vm.read_guest_nic(guest).virtio)
            state[f"virtio:{role}"] = {name.lower(): FeatureState(name in negotiated,
                                                                  requested=requested.get(name.lower()))
                                       for name in RECORDED_FEATURES}
        for name, component in self.forwarders.items():
            role = next(r for r, node in NODE.items() if node == name)
            for label, entry in component.state(self._fwd_setting()).items():
                # "fwd@a" as on one machine (the guest's forwarder), ports keyed by role.
                state[f"{label}@{role}" if label != "fwd" else f"fwd@{role}"] = entry
        return state

    def datapath_counters(self) -> dict[str, float]:
        grown: dict[str, float] = {}
        for name, component in self.forwarders.items():
            role = next(r for r, node in NODE.items() if node == name)
            grown.update({k.replace("fwd:", f"fwd@{role}:", 1): v for k, v in component.counters().items()})
        return grown

    def teardown(self) -> None:
        """Guests first (QEMU holds the TAPs), then every journaled change undone."""
        try:
            for role, guest in list(self.guests.items()):
                try:
                    guest.stop()
                except Exception:  # the journal's process entry kills it in any case
                    continue
                host = self.remote[NODE[role]]
                if role in self._taps and not host.has_link(TAP[role]):
                    self.journals[host.name].forget(self._taps.pop(role))  # gone with QEMU
            self.guest_hosts.clear()
            for component in self.forwarders.values():
                try:
                    component.stop()
                except Exception:  # the journal's process entry kills it in any case
                    continue
        finally:
            self.guests.clear()
            self.forwarders.clear()
            super().teardown()


def planned_changes(role: str, spec, cases, net: TestNetwork = TestNetwork()) -> list[str]:
    """What the plan's qemu topologies do to one server (sender or receiver), for
    `--dry-run` and the confirmation: devices, addresses, processes, files."""
    mine = [c for c in cases if c.scenario == SCENARIO]
    node = "a" if role == "sender" else "b"
    guests = [c for c in mine if node == "a" or c.topology.get("path", "vm2vm") == "vm2vm"]
    said = []
    if any(str(c.topology.get("backend", "tap")) != "vhost-user" for c in guests):
        said.append(f"bridge {BRIDGE} (TAP {TAP[node]} in it) created and removed; over overlay none "
                    f"{spec.interface} is its port for the topology, its addresses on {BRIDGE}, then back")
    if any(c.topology.get("overlay") == "vxlan" for c in mine):
        said.append(f"device {VXLAN_DEV} (VNI {net.vni}, UDP {net.vxlan_port}) over {spec.interface}, whose MTU is the "
                    f"case's + {VXLAN_OVERHEAD} meanwhile")
    if role == "receiver" and any(c.topology.get("path") == "vm2host" for c in mine):
        said.append(f"address {net.guest_addresses['b']}/{net.guest_prefixlen} added on vm2host "
                    f"(on {spec.interface}, or {VXLAN_DEV}) and removed")
    if guests:
        fwd = any(str(c.topology.get("backend")) == "vhost-user" for c in guests)
        said.append("processes: QEMU guest " + node.upper() + (", offlab-fwd (vhost-user, AF_PACKET on the wire's "
                                                               "device)" if fwd else "") + ", the KVM probe")
        said.append(f"files copied by hash into {files.CACHE_DIR} (guest kernel and initramfs; kept until "
                    "offlab restore --purge)")
    return said
