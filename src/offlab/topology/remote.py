"""Scenarios on the user's own servers (`offlab run --hosts hosts.toml`): the sender and
the receiver of the hosts file, their test interfaces as they are.

* `bare` uses the interfaces and their addresses as they are;
* a tunnel scenario (`vxlan`, …) builds the tunnel device `ofl-tn0` over each test
  interface (local = its address, remote = its peer) with inner addresses from
  10.202.0.0/24, removed at the end;
* an MTU other than the interface's is set on both ends and put back at the end.

Before the first change each host's original state is journaled (hosts/journal.py), and
teardown restores it. iperf3 runs pinned to each host's `app_core`; with `pin_irqs`
the interface's queue IRQs go to `irq_core` (the seed-002 App / S-IRQ layout).
"""

from __future__ import annotations

from pathlib import Path

from ..hosts.hostsfile import HostsFile
from ..hosts.journal import JOURNAL_DIR, Journal
from ..hosts.ssh import SshHost
from ..offloads import Interface
from ..records import Params
from .base import Endpoint, Topology, TopologyError
from .tunnel import INNER_V4, INNER_V6, KINDS, TX_TUNNEL

REMOTE_SCENARIOS = ("bare", *KINDS)


class RemotePair(Topology):
    """Two real hosts joined by their test interfaces."""

    def __init__(self, scenario: str, mtu: int, params: Params | None, hosts: HostsFile, *,
                 steer_rx_softirq: bool = True, journal_dir: Path = JOURNAL_DIR, **options: object):
        super().__init__(mtu, params, steer_rx_softirq=steer_rx_softirq)
        if scenario not in REMOTE_SCENARIOS:
            raise TopologyError(f"{scenario} needs local namespaces; on real hosts use "
                                f"{', '.join(REMOTE_SCENARIOS)}")
        unsupported = set(self.params) - {"underlay", "wire", "dut"}
        if unsupported:
            raise TopologyError(f"{scenario} on real hosts takes no {', '.join(sorted(unsupported))}")
        self.scenario = scenario  # type: ignore[misc]
        self.kind = KINDS.get(scenario)
        self.file = hosts
        self.journal_dir = journal_dir
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

    def _build(self) -> None:
        for name, role in (("tx", "sender"), ("rx", "receiver")):
            spec = self.file.hosts[role]
            host = SshHost(name, spec, self.file.ssh_config)
            self.remote[name] = host
            self.journals[name] = Journal(host, spec, self.file.ssh_config, self.journal_dir)
            self.set_mtu(host, spec.interface, self.mtu)
            if spec.pin_irqs:
                self._pin_irqs(name, host)
        if self.kind is not None:
            self._build_tunnel()

    def _pin_irqs(self, name: str, host: SshHost) -> None:
        """The test interface's queue IRQs to the host's irq_core (seed 002's S-IRQ
        core); each IRQ's original affinity journaled first. irqbalance would move them
        back: it is named in a warning of `offlab doctor --hosts`."""
        spec = host.spec
        listing = host.run(["ls", f"/sys/class/net/{spec.interface}/device/msi_irqs"], check=False)
        irqs = listing.stdout.split()
        if listing.returncode != 0 or not irqs:
            raise TopologyError(f"{name} ({spec.ssh}): {spec.interface} has no MSI IRQs to pin "
                                "(a virtual device?); set pin_irqs = false")
        if host.run(["sh", "-c", "pgrep -x irqbalance"], check=False).stdout.strip():
            raise TopologyError(f"{name} ({spec.ssh}): irqbalance is running and would move the pinned "
                                "IRQs back; stop it (systemctl stop irqbalance) or set pin_irqs = false")
        for irq in irqs:
            path = f"/proc/irq/{irq}/smp_affinity_list"
            original = host.read_file(path).strip()
            self.journals[name].changed_irq(irq, original)
            if not host.write_file(path, f"{spec.irq_core}\n", check=False):
                raise TopologyError(f"{name} ({spec.ssh}): cannot pin IRQ {irq} to core {spec.irq_core}")

    def _build_tunnel(self) -> None:
        assert self.kind is not None
        inner = INNER_V6 if self.kind.inner_ipv6 else INNER_V4
        for (name, host), address in zip(self.remote.items(), inner[:2]):
            spec = host.spec
            underlay = "ipv6" if ":" in spec.address else "ipv4"
            self.journals[name].created(TX_TUNNEL)
            done = host.ip(*self.kind.link_args(TX_TUNNEL, underlay, spec.address, spec.peer, spec.interface),
                           check=False)
            if done.returncode != 0:
                raise TopologyError(f"{name} ({spec.ssh}): cannot make {self.scenario} over {underlay}: "
                                    f"{done.stderr.strip()} (needs {self.kind.config})")
            self.set_mtu(host, TX_TUNNEL, self.mtu - self.kind.overhead(underlay))
            host.add_address(TX_TUNNEL, address, inner[2])

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
            inner = INNER_V6 if self.kind.inner_ipv6 else INNER_V4
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
                found.append(Interface(side, host, TX_TUNNEL))
            found.append(Interface(side, host, host.spec.interface))
        return found

    def teardown(self) -> None:
        """Every host back as its journal says (the journal stays if that fails, for
        `offlab restore`)."""
        failed = []
        for name, journal in list(self.journals.items()):
            try:
                journal.restore()
                del self.journals[name]
            except Exception as err:  # one host's failure must not keep the other changed
                failed.append(f"{name}: {err}")
        for host in self.remote.values():
            host.close()
        if failed:
            raise TopologyError("could not restore " + "; ".join(failed) + "; run `offlab restore`")


def remote_builder(hosts: HostsFile, journal_dir: Path = JOURNAL_DIR):
    """A `build` for the runner that makes scenarios on the hosts of a hosts file."""

    def build(scenario: str, mtu: int, topology: Params | None = None, **options: object) -> Topology:
        return RemotePair(scenario, mtu, topology, hosts, journal_dir=journal_dir, **options)

    return build
