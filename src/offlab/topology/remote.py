"""Scenarios on the user's own servers (`offlab run --hosts hosts.toml`): the sender and
the receiver of the hosts file, their test interfaces as they are.

* `bare` uses the interfaces and their addresses as they are;
* a tunnel scenario (`vxlan`, …) builds the tunnel device `ofl-tn0` over each test
  interface (local = its address, remote = its peer) with inner addresses from the
  hosts file's [test_network] prefix (10.202.0.0/24 unless set; its VNI and UDP port
  too), removed at the end;
* an MTU other than the interface's is set on both ends and put back at the end;
* `wire = "nic"` (the transmitter sequence) is the NICs' own wire: a NIC pair already
  hands the receiver MTU frames; `wire = "mtu"` (the receiver sequence) holds the sender's segmentation offloads off
  as in the lab, so the receiver gets MTU frames whatever the profile;
* with `steer_rx_softirq` (the plans' default) the receiver's test interface gets RPS
  to the receiver's application core, as the lab steers receive processing to the
  receiving namespace's core — unless `pin_irqs` puts its IRQs on `irq_core`, which is
  then where receive processing runs (hosts/facts.py's `steering_text` says which, for
  the report).

Each change is journaled before it is made (hosts/journal.py), on the controller and
on the server, and teardown undoes it. The connections, the servers' hold and their
watchdog belong to the run (hosts/session.py). iperf3 runs pinned to each host's
`app_core`; with `pin_irqs` the interface's queue IRQs go to `irq_core` (the seed-002
App / S-IRQ layout).
"""

from __future__ import annotations

from ..hosts import changes
from ..hosts.hostsfile import HostSpec
from ..hosts.journal import Journal
from ..hosts.session import HOST_NAMES, RemoteSession
from ..hosts.ssh import SshHost
from ..hosts.offloads import Interface
from ..records import Params
from .bare import MTU_WIRE_SENDER
from .base import Endpoint, Topology, TopologyError, deferred_signals
from .tunnel import INNER_V6, KINDS, TX_TUNNEL

REMOTE_SCENARIOS = ("bare", *KINDS, "qemu")
"""`qemu`: real guests on the servers (remote_guests.py)."""


WIRES = ("mtu", "nic")
"""The wires a real pair has: "nic" is its own (the lab builds one to match it)."""


class RemotePair(Topology):
    """Two real hosts joined by their test interfaces."""

    def __init__(self, scenario: str, mtu: int, params: Params | None, session: RemoteSession, *,
                 steer_rx_softirq: bool = True, **options: object):
        super().__init__(mtu, params, steer_rx_softirq=steer_rx_softirq)
        self._check(scenario)
        self.wire = self.params.get("wire")
        if self.wire is not None and self.wire not in WIRES:
            raise TopologyError(f"wire {self.wire!r} on real hosts: use \"mtu\", or \"nic\" (or leave it "
                                "out) for the NICs' own wire")
        self.scenario = scenario  # type: ignore[misc]
        self.kind = KINDS.get(scenario)
        self.session = session
        hosts = session.file
        self.file = hosts
        self.net = hosts.test_network
        self.iperf3_port = self.net.iperf3_port
        self.remote: dict[str, SshHost] = {}
        self.journals: dict[str, Journal] = {}
        self.sender_core = hosts.hosts["sender"].app_core
        self.receiver_core = hosts.hosts["receiver"].app_core
        self.dut = self.params.get("dut")
        if self.dut is not None:
            spec = hosts.hosts["receiver" if self.dut == "rcv" else "sender"]
            if spec.irq_core is None or not spec.pin_irqs:
                raise TopologyError(f"a DUT layout on real hosts needs the DUT's IRQs on a core of "
                                    f"their own: set irq_core and pin_irqs = true for [{spec.role}] "
                                    f"in {hosts.source}")

    def _check(self, scenario: str) -> None:
        """Refuse a scenario or parameter this class cannot build on real hosts."""
        if scenario not in REMOTE_SCENARIOS:
            raise TopologyError(f"{scenario} needs local namespaces; on real hosts use "
                                f"{', '.join(REMOTE_SCENARIOS)}")
        unsupported = set(self.params) - {"underlay", "wire", "dut"}
        if unsupported:
            raise TopologyError(f"{scenario} on real hosts takes no {', '.join(sorted(unsupported))}")

    def _build(self) -> None:
        for role, name in HOST_NAMES.items():
            spec = self.file.hosts[role]
            host = self.session.hosts[role]
            self.remote[name] = host
            journal = Journal(host, spec, self.file.ssh_config, self.session.identities[role],
                              self.session.journal_dir, mirror=self.session.servers[role])
            self.journals[name] = journal
            host.journal = journal
            self.set_mtu(host, spec.interface, self.mtu)
            if spec.pin_irqs:
                self._pin_irqs(name, host)
            elif self.steer_rx_softirq and role == "receiver":
                self._steer(host, spec)
        if self.kind is not None:
            self._build_tunnel()

    def set_mtu(self, host, device: str, mtu: int) -> None:
        host.journal.before_link(device, mtu, True)
        super().set_mtu(host, device, mtu)

    def _steer(self, host: SshHost, spec: HostSpec) -> None:
        """RPS of the receiver's test interface to its application core (journaled)."""
        queues = f"/sys/class/net/{spec.interface}/queues"
        for queue in (q for q in host.run(["ls", queues]).stdout.split() if q.startswith("rx-")):
            if not host.write_file(f"{queues}/{queue}/rps_cpus", f"{1 << spec.app_core:x}\n", check=False):
                raise TopologyError(f"rx ({spec.ssh}): cannot set RPS of {spec.interface} {queue}; "
                                    "set steer_rx_softirq = false in the plan")

    def _pin_irqs(self, name: str, host: SshHost) -> None:
        """The test interface's queue IRQs to the host's irq_core (seed 002's S-IRQ
        core); each IRQ's original affinity journaled first. irqbalance would move them
        back, so a running irqbalance is refused (offlab never stops it)."""
        spec = host.spec
        listing = host.run(["ls", f"/sys/class/net/{spec.interface}/device/msi_irqs"], check=False)
        irqs = listing.stdout.split()
        if listing.returncode != 0 or not irqs:
            raise TopologyError(f"{name} ({spec.ssh}): {spec.interface} has no MSI IRQs to pin "
                                "(a virtual device?); set pin_irqs = false")
        if host.run(["pgrep", "-x", "irqbalance"], check=False).stdout.strip():
            raise TopologyError(f"{name} ({spec.ssh}): irqbalance is running and would move the pinned "
                                "IRQs back; stop it (systemctl stop irqbalance) or set pin_irqs = false")
        for irq in irqs:
            path = f"/proc/irq/{irq}/smp_affinity_list"
            if not host.write_file(path, f"{spec.irq_core}\n", check=False):
                raise TopologyError(f"{name} ({spec.ssh}): cannot pin IRQ {irq} to core {spec.irq_core}")

    def _build_tunnel(self) -> None:
        assert self.kind is not None
        inner = self._inner()
        for (name, host), address in zip(self.remote.items(), inner[:2]):
            spec = host.spec
            underlay = "ipv6" if ":" in spec.address else "ipv4"
            self.journals[name].add(changes.device(TX_TUNNEL))
            done = host.ip(*self.kind.link_args(TX_TUNNEL, underlay, spec.address, spec.peer, spec.interface,
                                                self.net.vni, self.net.vxlan_port), check=False)
            if done.returncode != 0:
                raise TopologyError(f"{name} ({spec.ssh}): cannot make {self.scenario} over {underlay}: "
                                    f"{done.stderr.strip()} (needs {self.kind.config})")
            self.set_mtu(host, TX_TUNNEL, self.mtu - self.kind.overhead(underlay))
            host.add_address(TX_TUNNEL, address, inner[2])

    def _inner(self) -> tuple[str, str, int]:
        """The tunnel's inner addresses: the [test_network] prefix's .1 and .2 (IPv4)."""
        assert self.kind is not None
        return INNER_V6 if self.kind.inner_ipv6 else self.net.inner_v4

    @property
    def hosts_by_name(self) -> dict[str, SshHost]:
        return self.remote

    def counter_hosts(self) -> dict[str, SshHost]:  # type: ignore[override]
        return dict(self.remote)

    def nic_interfaces(self) -> dict[str, list[str]]:
        return {name: [host.spec.interface] for name, host in self.remote.items()}

    def _endpoint(self, role: str, name: str) -> Endpoint:
        host = self.remote[name]
        if self.kind is not None:
            inner = self._inner()
            address = inner[0] if name == "tx" else inner[1]
        else:
            address = host.spec.address
        return Endpoint(role, host, address, host.spec.app_core)

    @property
    def sender(self) -> Endpoint:
        return self._endpoint("sender", "tx")

    @property
    def receiver(self) -> Endpoint:
        return self._endpoint("receiver", "rx")

    @property
    def roles(self) -> dict[str, int]:
        """Seed 002's rows on real hosts: the DUT's application core and the core its
        IRQs (and so its softirq work) are pinned to, and the generator's application."""
        if self.dut is None:
            return super().roles
        dut = self.file.hosts["receiver" if self.dut == "rcv" else "sender"]
        generator = self.file.hosts["sender" if self.dut == "rcv" else "receiver"]
        return {"dut-app": dut.app_core, "dut-softirq": dut.irq_core or 0, "generator": generator.app_core}

    @property
    def role_hosts(self) -> dict[str, str]:
        if self.dut is None:
            return {"sender": "tx", "receiver": "rx"}
        dut, generator = ("rx", "tx") if self.dut == "rcv" else ("tx", "rx")
        return {"dut-app": dut, "dut-softirq": dut, "generator": generator}

    def offload_interfaces(self) -> list[Interface]:
        found = []
        for name, side in (("tx", "tx"), ("rx", "rx")):
            host = self.remote[name]
            if self.kind is not None:
                found.append(Interface(side, host, TX_TUNNEL, self._held(side)))
            found.append(Interface(side, host, host.spec.interface, self._held(side, underlay=True),
                                   self._baseline(name)))
        return found

    def _baseline(self, name: str) -> dict[str, bool] | None:
        """`baseline = "as-configured"`: the test interface's features as the journal
        found them before this run changed anything; None: all on."""
        if self.file.baseline != "as-configured":
            return None
        return dict(self.journals[name].original_features)

    def _held(self, side: str, underlay: bool = False) -> dict[str, bool]:
        """The MTU wire: the sender's segmentation offloads off (and, under a tunnel,
        the tunnel's segmentation on the test interface), as the lab holds them."""
        if self.wire != "mtu" or side != "tx":
            return {}
        tunnel = {f: False for f in self.kind.segmentation} if underlay and self.kind is not None else {}
        return {**MTU_WIRE_SENDER, **tunnel}

    def teardown(self) -> None:
        """Every host back as its journal says; a host that fails does not keep the
        other changed (its journal stays, here and on the server, for `offlab restore`
        and the server's watchdog). A signal waits until every host is back, as in a
        local topology's teardown: one that arrives after the run began unwinding for
        another reason (a lost lease, an error) would otherwise cut a restore in half."""
        failed = []
        with deferred_signals():
            for name, journal in list(self.journals.items()):
                try:
                    journal.restore()
                    del self.journals[name]
                    self.session.drift += journal.drift
                except Exception as err:  # one host's failure must not keep the other changed
                    failed.append(f"{name}: {err}")
                finally:
                    self.remote[name].journal = None
        if failed:
            raise TopologyError("could not restore " + "; ".join(failed) + "; run `offlab restore`")
