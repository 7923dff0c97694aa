"""The middlebox's nodes on three servers (`offlab run --hosts` with a `[router]` table):
seed 003's "Host A — router — Host B" with the user's own machines and NICs. The
topology is `middlebox.Middlebox`, its steps the same as in namespaces; `OnServers` is
the site that says what those steps do here.

    A (sender) iface ─── iface[0]  R  iface[1] ─── iface B (receiver)

A and B are the hosts file's sender and receiver, R its router. The links are cabled
and the addressing is the user's and stays as it is: A and B on two networks, each with
a route to the other through R (A's `peer` is B's address). Terminated paths (A → R,
R → A, …) use R's own address on the interface toward that host, read from R.

* **R as the kernel** routes between its two interfaces. Its IP forwarding (IPv4, or
  IPv6 when the test addresses are) must be on: `offlab doctor --hosts` says whether it
  is; a run refuses when it is off unless `--allow-forwarding`, which turns it on,
  journaled, and puts it back at the end.
* **R as offlab-fwd** bridges its two interfaces with two AF_PACKET ports (promiscuous)
  — the controller's build, copied to R by hash (remote_fwd.py). A bridge carries a
  frame as it came, so A must address B's MAC, not R's: while the topology stands, A gets
  a host route to B on its test interface and a permanent neighbour entry with B's MAC
  (and B the same toward A), each journaled and removed at the end. R's kernel sees
  those frames as another host's and leaves them alone. Forwarded paths only.

The offload matrix is applied to R's two interfaces, starting from all on or, with the
hosts file's `baseline = "as-configured"`, from R's features as the journal found them;
A's and B's are left as configured.
Every change — the MTU of the four interfaces, R's features, forwarding, routes and
neighbour entries, iperf3/offlab-fwd processes — is journaled before it is made
(hosts/journal.py), one journal per server and interface. Counters (`/proc/net/snmp`,
`ethtool -S` of the test interfaces) and CPU per core × class are read on all three;
the roles' cores are the hosts' `app_core`s. No RPS steering is applied here.
"""

from __future__ import annotations

from dataclasses import replace

from ..hosts import Host, changes
from ..hosts.journal import Journal, read_identity
from ..hosts.router import forwarding_path, forwarding_refusal, own_address
from ..hosts.session import RemoteSession
from ..hosts.ssh import SshHost
from .base import TopologyError, deferred_signals
from .fwd import FwdConfig
from .middlebox import NODES, End, MiddleboxSite
from .remote_fwd import RemoteForwarder, install_binary

ROLES = {"a": "sender", "r": "router", "b": "receiver"}
"""Node of the middlebox → role of the hosts file."""


class OnServers(MiddleboxSite):
    apart = True

    def __init__(self, session: RemoteSession):
        if session.file.router is None:
            raise TopologyError(f"the middlebox on real hosts needs a [router] table in {session.file.source}")
        self.session = session
        self.specs = {node: session.file.roles()[role] for node, role in ROLES.items()}
        self.where = f" on R ({self.specs['r'].ssh})"
        self.remote: dict[str, SshHost] = {}
        self.journals: list[Journal] = []
        self.node_journal: dict[str, Journal] = {}
        """node → the journal of its first interface, where its other changes are written."""
        self._original: dict[End, dict[str, bool]] = {}
        """(node, interface) → its features as the journal found them (baseline)."""
        self.r_address: dict[str, str] = {}
        """R's own address toward "a" and toward "b" (terminated paths)."""
        self._binary = ""

    def join(self, box) -> None:
        super().join(box)
        box.iperf3_port = self.session.file.test_network.iperf3_port

    def make_forwarder(self):
        return self._remote_forwarder

    def _remote_forwarder(self, config: FwdConfig) -> RemoteForwarder:
        return RemoteForwarder(self.remote["r"], config, self._binary)

    def interfaces(self, node: str) -> tuple[str, ...]:
        spec = self.specs[node]
        return tuple(spec.interfaces) or (spec.interface,)

    def ends(self) -> tuple[End, End, End, End]:
        toward_a, toward_b = self.interfaces("r")  # the hosts file's [router] has two
        return ("a", self.specs["a"].interface), ("r", toward_a), ("r", toward_b), ("b", self.specs["b"].interface)

    # --- the steps ----------------------------------------------------------------------

    def open(self) -> dict[str, Host]:
        """The session's servers, each test interface journaled before anything changes."""
        self.remote = {node: self.session.hosts[role] for node, role in ROLES.items()}
        for node in NODES:
            for interface in self.interfaces(node):
                self._journal(node, interface)
        return dict(self.remote)

    def _journal(self, node: str, interface: str) -> None:
        """A journal per server and interface (R has two); R's first one is where its
        other changes (processes, forwarding) are written."""
        host, role = self.remote[node], ROLES[node]
        spec = replace(self.specs[node], interface=interface)
        identity = self.session.identities[role]
        if interface != self.specs[node].interface:  # the session read (and watches) the first
            identity = read_identity(host, interface)
            self.session.watch_interface(role, host, identity.key)
        journal = Journal(host, spec, self.session.file.ssh_config, identity, self.session.journal_dir,
                          mirror=self.session.servers[role])
        self.journals.append(journal)
        self._original[(node, interface)] = dict(journal.original_features)
        if node not in self.node_journal:
            self.node_journal[node] = host.journal = journal

    def before_mtu(self, node: str, device: str, mtu: int) -> None:
        self.node_journal[node].before_link(device, mtu, True)

    def address(self) -> None:
        """The user's addresses stay; R's own on each side is read (terminated paths)."""
        toward_a, toward_b = self.interfaces("r")
        like, r = self.specs["a"].address, self.remote["r"]
        self.r_address = {"a": own_address(r, toward_a, like), "b": own_address(r, toward_b, like)}

    def route(self) -> None:
        """A and B route via R already (the user's); R's forwarding on if it is off and
        the run allows it (journaled by the host: before_write)."""
        r, path = self.remote["r"], forwarding_path(self.session.file)
        if r.read_file(path).strip() == "1":
            return
        if not self.session.allow_forwarding:
            raise TopologyError(forwarding_refusal(self.session.file))
        r.write_file(path, "1\n")

    def bridge(self) -> None:
        self._binary, _ = install_binary(self.remote["r"])
        self._direct("a", "b")
        self._direct("b", "a")

    def _direct(self, node: str, other: str) -> None:
        """`node` sends to `other` on its own link with `other`'s MAC (a host route and a
        permanent neighbour entry, both journaled): the frames offlab-fwd bridges."""
        host, spec, peer = self.remote[node], self.specs[node], self.specs[other]
        journal = self.node_journal[node]
        mac = self.remote[other].read_file(f"/sys/class/net/{peer.interface}/address").strip()
        prefix = f"{peer.address}/{128 if ':' in peer.address else 32}"
        route = (prefix, "dev", spec.interface)
        journal.add(changes.route(route))
        done = host.ip("route", "add", *route, check=False)
        if done.returncode != 0:
            raise TopologyError(f"{node} ({spec.ssh}): cannot add the route {' '.join(route)} for offlab-fwd "
                                f"as R: {done.stderr.strip()}")
        journal.before_neigh(peer.address, spec.interface, mac)
        host.ip("neigh", "replace", peer.address, "lladdr", mac, "dev", spec.interface, "nud", "permanent")

    # --- the nodes: the hosts file's three servers -------------------------------------

    def node_core(self, node: str) -> int:
        return self.specs[node].app_core

    def node_address(self, node: str, other: str) -> str:
        if node != "r":
            return self.specs[node].address
        address = self.r_address.get(other, "")
        if not address:
            interface = self.interfaces("r")[0 if other == "a" else 1]
            raise TopologyError(f"router ({self.specs['r'].ssh}): {interface} has no address for the "
                                f"terminated path {self.box.path.label}; address it (offlab never does)")
        return address

    def baseline(self, device: str) -> dict[str, bool] | None:
        """With the hosts file's `baseline = "as-configured"`, R's features as the journal found them."""
        return self._original[("r", device)] if self.session.file.baseline == "as-configured" else None

    def nic_interfaces(self) -> dict[str, list[str]]:
        return {node: list(self.interfaces(node)) for node in NODES}

    # --- putting back -------------------------------------------------------------------

    def restore(self) -> list[str]:
        """Every server as its journals say; a server that fails does not keep the
        others changed (its journal stays for `offlab restore`). Signals wait until
        every server is back (remote.py's teardown says why)."""
        failed = []
        with deferred_signals():
            for journal in reversed(self.journals):
                try:
                    journal.restore()
                    self.session.drift += journal.drift
                except Exception as err:  # one server's failure must not keep another changed
                    failed.append(str(err))
        self.journals.clear()
        self.node_journal.clear()
        for host in self.remote.values():
            host.journal = None
        return failed

    def failure(self, failed: list[str]) -> TopologyError:
        return TopologyError("could not restore " + "; ".join(failed) + "; run `offlab restore`")
