"""The stand-ins for a user's servers, shared by every test of the session that reaches
servers over SSH: each server a network namespace running its own OpenSSH server
(Debian's openssh-server, started here with a throwaway host key and client key —
nothing of this machine's ssh setup is read or changed), reached from the root
namespace over a management veth.

A rig is one SHAPE of them, wired: its test links, routes, ssh_config and hosts file.
The shapes are data (PAIR: hosta ⇄ hostb; ROUTER: hosta ⇄ hostr ⇄ hostb; FLEET: two
pairs). The servers start once per session; a shape stays wired while the tests that
ask for it follow one another, and one wiring at a time is on the servers (offlab
counts an `ofl-` device its hosts file does not name as another run's).

After every test the rig is reset (`Rig.reset`): what the test started on the servers
is ended, a killed sshd started again, journals and the hold a failed test left are
removed, and then everything a run may change on the servers — devices, MTUs, link
states, ethtool features, addresses, routes and rules, permanent neighbours, qdiscs,
forwarding, the login user's sudoers — is read again and compared with what it was when the rig
was wired. A difference fails the test that left it, and the rig's servers are made
anew (namespace, sshd, wiring), so no test starts on another's leftovers.

The servers' namespaces are owned by a keeper process (`tail --pid=<pytest>`), not by
pytest itself: the modules that check "no namespace of this process is left"
(our_namespaces()) keep checking exactly their own, and when pytest is killed the keeper
ends with it, so the next session's sweep_leftovers() removes the servers as stale."""

from __future__ import annotations

import json
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from offlab.hosts import LocalNamespace, connect_veth
from offlab.hosts.journal import JOURNAL_DIR
from offlab.hosts.server import SERVER_DIR
from offlab.proc import run
from offlab.topology.remote_fwd import OUTPUT_PREFIX

SSHD = "/usr/sbin/sshd"
WATCHDOG_S = 10
"""The servers restore themselves 10 s after the controller's last heartbeat (60 s by
default): short, so a test of it waits little."""
DOCS = Path(__file__).resolve().parents[2] / "docs" / "real-hosts.md"
SUDOERS = Path("/etc/sudoers.d")


@dataclass(frozen=True)
class ServerSpec:
    root_dev: str
    """Root-side management device (ofl-, removed at the end). The server's end is `mgmt0`,
    not ofl-: offlab refuses servers with ofl- devices it did not name."""
    root_addr: str
    address: str
    """The server's management address: where its sshd listens."""
    state: str | None = None
    """A private /var/lib/offlab for the server's sshd and all it starts (a mount of its
    own), as a second machine has its own disk; None: the machine's own."""
    syslog: bool = False
    """A syslog of the server's own: its sshd and all it starts see a private /dev whose
    /dev/log is a socket the pool reads (`ServerPool.syslog`); this machine has none."""


SERVERS = {
    "a": ServerSpec("ofl-ma", "10.240.1.1", "10.240.1.2", syslog=True),
    "b": ServerSpec("ofl-mb", "10.240.2.1", "10.240.2.2"),
    # The fleet's second pair: its run holds and journals must not meet the first pair's
    # in one directory, as they would not on two real pairs of servers.
    "c": ServerSpec("ofl-mc", "10.240.3.1", "10.240.3.2", state="pair-cd"),
    "d": ServerSpec("ofl-md", "10.240.4.1", "10.240.4.2", state="pair-cd"),
    "r": ServerSpec("ofl-mr", "10.240.5.1", "10.240.5.2"),
}
MGMT = {name: (spec.root_dev, "mgmt0", spec.root_addr, spec.address) for name, spec in SERVERS.items()}
"""Root-side device, the server's end, addresses."""


@dataclass(frozen=True)
class Port:
    server: str
    device: str
    address: str


@dataclass(frozen=True)
class Role:
    """One `[sender]`/`[receiver]`/`[router]` entry of the hosts file."""
    name: str
    port: Port
    peer: str = ""
    app_core: int = 0
    interfaces: tuple[str, ...] = ()
    """A router's two interfaces (toward the sender, toward the receiver)."""


@dataclass(frozen=True)
class Shape:
    name: str
    servers: tuple[str, ...]
    links: tuple[tuple[Port, Port], ...]
    pairs: tuple[tuple[str | None, tuple[Role, ...]], ...]
    """The hosts file: per pair its name (None: the file's one pair, no [[pair]] table)
    and its roles."""
    routes: tuple[tuple[str, str, str], ...] = ()
    """(server, network, gateway)."""
    forwarding_off: tuple[str, ...] = ()
    """Servers whose IP forwarding starts off (a run needs --allow-forwarding)."""
    alias: str = "host"
    """ssh aliases are alias + server name."""

    def pair_servers(self) -> dict[str | None, tuple[str, str]]:
        """Per pair, its sender's and its receiver's server."""
        return {pair: (roles[0].port.server, roles[1].port.server) for pair, roles in self.pairs}

    def ports(self) -> dict[str, tuple[str, ...]]:
        found: dict[str, tuple[str, ...]] = {name: () for name in self.servers}
        for link in self.links:
            for port in link:
                found[port.server] += (port.device,)
        return found


def _pair(a: Port, b: Port) -> tuple[Role, Role]:
    return (Role("sender", a, peer=b.address, app_core=0), Role("receiver", b, peer=a.address, app_core=1))


_TA, _TB = Port("a", "ofl-ta0", "10.241.0.1"), Port("b", "ofl-tb0", "10.241.0.2")
PAIR = Shape("pair", ("a", "b"), ((_TA, _TB),), ((None, _pair(_TA, _TB)),))
"""hosta (sender) ⇄ hostb (receiver) on one test link."""

_RA, _RR0 = Port("a", "ofl-3a0", "10.243.1.1"), Port("r", "ofl-3r0", "10.243.1.2")
_RR1, _RB = Port("r", "ofl-3r1", "10.243.2.1"), Port("b", "ofl-3b0", "10.243.2.2")
ROUTER = Shape("router", ("a", "r", "b"), ((_RA, _RR0), (_RR1, _RB)),
               ((None, (*_pair(_RA, _RB), Role("router", _RR0, app_core=1, interfaces=("ofl-3r0", "ofl-3r1")))),),
               routes=(("a", "10.243.2.0/24", "10.243.1.2"), ("b", "10.243.1.0/24", "10.243.2.1")),
               forwarding_off=("r",))
"""hosta ⇄ hostr ⇄ hostb: A and B on two networks, each routed to the other through R,
as a user's would be."""

_FA, _FB = Port("a", "ofl-ta0", "10.243.1.1"), Port("b", "ofl-tb0", "10.243.1.2")
_FC, _FD = Port("c", "ofl-tc0", "10.243.2.1"), Port("d", "ofl-td0", "10.243.2.2")
FLEET = Shape("fleet", ("a", "b", "c", "d"), ((_FA, _FB), (_FC, _FD)),
              (("pair-ab", _pair(_FA, _FB)), ("pair-cd", _pair(_FC, _FD))), alias="fleet")
"""Two sender/receiver pairs (fleeta ⇄ fleetb, fleetc ⇄ fleetd), a fleet file naming both
(campaign.py); the second pair's servers have a /var/lib/offlab of their own."""


def sudoers_snippet(user: str, password: bool = False) -> str:
    """docs/real-hosts.md's sudoers snippet for `user`, as a user would paste it (the rig
    tests the documented one); `password`: without NOPASSWD (sudo -n then refuses)."""
    found = re.search(r"```text\n(# /etc/sudoers\.d/offlab.*?)```", DOCS.read_text(), re.S)
    assert found, "docs/real-hosts.md has no sudoers snippet"
    text = re.sub(r"^USER ", f"{user} ", found.group(1), flags=re.M)
    return text.replace("NOPASSWD: ", "") if password else text


class ServerPool:
    """The session's servers: namespaces, management veths, keys and sshd processes."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="offlab-sshrig-"))
        self.servers: dict[str, LocalNamespace] = {}
        self.sshd: dict[str, subprocess.Popen] = {}
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.key)])
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.folder / "host_key")])
        (self.folder / "authorized_keys").write_text(self.public_key)
        os.chmod(self.folder / "authorized_keys", 0o600)
        self.keeper = subprocess.Popen(["tail", f"--pid={os.getpid()}", "-f", "/dev/null"],
                                       stdout=subprocess.DEVNULL)
        # Traversable (not readable) by a rig's non-root login user: the syslog sockets
        # are here; the keys stay 0600.
        os.chmod(self.folder, 0o711)
        self.syslogs: dict[str, Syslog] = {}

    @property
    def key(self) -> Path:
        return self.folder / "id_ed25519"

    @property
    def public_key(self) -> str:
        return (self.folder / "id_ed25519.pub").read_text()

    def server(self, name: str) -> LocalNamespace:
        """Server `name`, started on first use; its sshd started again if a test killed it."""
        if name not in self.servers:
            self._create(name)
        if name not in self.sshd or self.sshd[name].poll() is not None:
            self._start_sshd(name)
        return self.servers[name]

    def syslog(self, name: str) -> "Syslog":
        """What server `name` (a ServerSpec with syslog) logged to its /dev/log."""
        return self.syslogs[name]

    def ssh_entry(self, alias: str, name: str, user: str = "root") -> str:
        """An ssh_config stanza reaching server `name` as `alias`, logging in as `user`."""
        return (f"Host {alias}\n  HostName {SERVERS[name].address}\n  User {user}\n"
                f"  IdentityFile {self.key}\n  IdentitiesOnly yes\n  StrictHostKeyChecking no\n"
                "  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n")

    def _create(self, name: str) -> None:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege-separation dir
        spec = SERVERS[name]
        server = LocalNamespace(f"ssh{name}", pid=self.keeper.pid).create()
        try:
            run(["ip", "link", "add", spec.root_dev, "type", "veth", "peer", "name", "mgmt0",
                 "netns", server.namespace])
            run(["ip", "addr", "add", f"{spec.root_addr}/24", "dev", spec.root_dev])
            run(["ip", "link", "set", spec.root_dev, "up"])
            server.add_address("mgmt0", spec.address, 24)
            server.set_link("mgmt0")
            server.set_link("lo")
        except Exception:
            # Only the namespace (and the veth, which goes with it) is this call's: a
            # management device that already existed is another session's. The error is
            # the test's, not a half-made server the next test would trip on.
            server.remove()
            raise
        self.servers[name] = server
        if spec.syslog and name not in self.syslogs:
            self.syslogs[name] = Syslog(self.folder / f"syslog-{name}.sock")
        self._start_sshd(name)

    def renew(self, names) -> None:
        """Servers `names` made anew (namespace, management link, sshd): what a test left
        on them that a rig's own wiring does not cover (a route on the management link)."""
        for name in names:
            self.kill_sshd(name)
            self.end_sessions([name])
            self.servers.pop(name).remove()
            run(["ip", "link", "del", SERVERS[name].root_dev], check=False)
            self._create(name)

    def _start_sshd(self, name: str) -> None:
        spec, server = SERVERS[name], self.servers[name]
        config = self.folder / f"sshd_{name}"
        config.write_text(
            f"ListenAddress {spec.address}\nHostKey {self.folder / 'host_key'}\n"
            # root's key here; a rig's login user's in its own home
            f"AuthorizedKeysFile {self.folder / 'authorized_keys'} .ssh/authorized_keys\nPermitRootLogin prohibit-password\n"
            "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
            f"PidFile {self.folder / f'sshd_{name}.pid'}\nMaxSessions 50\nMaxStartups 50\n")
        command = [SSHD, "-D", "-e", "-f", str(config)]
        # A server's root logs in without this machine's shell profile: bash reads
        # ~/.bashrc for every command sshd hands it, and this machine's (pyenv init) costs
        # ~250 ms per command, which a server of the lab's would not. Its own mount
        # namespace, like the state and syslog below.
        if Path("/root/.bashrc").is_file():
            empty = self.folder / "empty_bashrc"
            empty.write_text("")
            command = ["unshare", "--mount", "--propagation", "slave", "sh", "-c",
                       f'mount --bind "{empty}" /root/.bashrc && exec "$@"', "sh", *command]
        # Both below (state, syslog): a mount namespace of the server's own, a slave of
        # this one — its own mounts stay inside, but what this machine mounts later still
        # reaches it (a named network namespace a test adds: /run/netns/NAME is a mount),
        # as a real server sees every namespace made on it.
        if spec.state is not None:
            state = self.state_dir(name)
            state.mkdir(exist_ok=True)
            Path("/var/lib/offlab").mkdir(parents=True, exist_ok=True)
            command = ["unshare", "--mount", "--propagation", "slave", "sh", "-c",
                       f'mount --bind "{state}" /var/lib/offlab && exec "$@"', "sh", *command]
        if spec.syslog:
            hold = self.folder / f"dev-{name}"
            hold.mkdir(exist_ok=True)
            command = ["unshare", "--mount", "--propagation", "slave", "sh", "-c", _OWN_DEV_LOG, "sh",
                       str(hold), str(self.syslogs[name].path), *command]
        self.sshd[name] = server.spawn(command)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            probe = run(["ssh", "-F", "/dev/null", "-o", "BatchMode=yes", "-o", "ConnectTimeout=1",
                         "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
                         "-i", str(self.key), f"root@{spec.address}", "true"], check=False, timeout=5)
            if probe.returncode == 0:
                return
            time.sleep(0.1)
        raise RuntimeError(f"sshd in {server.namespace} did not answer: {probe.stderr}")

    def state_dir(self, name: str) -> Path:
        """Where server `name` keeps /var/lib/offlab (this machine's own unless its spec
        gives it one)."""
        spec = SERVERS[name]
        return self.folder / f"state-{spec.state}" if spec.state else Path("/var/lib/offlab")

    def pids(self, name: str) -> list[int]:
        return [int(pid) for pid in run(["ip", "netns", "pids", self.servers[name].namespace],
                                        check=False).stdout.split()]

    def kill_sshd(self, name: str) -> None:
        """The host goes away: its sshd and every session it carries."""
        self.sshd[name].send_signal(signal.SIGKILL)
        self.sshd[name].wait()
        for pid in self.pids(name):
            try:
                if "sshd" in Path(f"/proc/{pid}/comm").read_text():
                    os.kill(pid, signal.SIGKILL)
            except (FileNotFoundError, ProcessLookupError):
                pass  # it ended between the listing and here: gone is what we want

    def end_sessions(self, names) -> None:
        """Everything running on servers `names` but their listening sshd: what a test
        started there (iperf3, watchdogs, QEMU, sessions), as a fresh start would."""
        for name in names:
            for pid in self.pids(name):
                if pid != self.sshd[name].pid:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass  # ended on its own meanwhile

    def stop(self) -> None:
        for process in self.sshd.values():
            if process.poll() is None:
                process.kill()
                process.wait()
        self.end_sessions([name for name in self.servers if self.sshd[name].poll() is None])
        for name, server in self.servers.items():
            server.remove()
            run(["ip", "link", "del", SERVERS[name].root_dev], check=False)
        for syslog in self.syslogs.values():
            syslog.close()
        self.keeper.kill()
        self.keeper.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


def _fwd_output_dirs() -> list[str]:
    """offlab-fwd's output directories on the servers, which share this machine's /tmp."""
    return sorted(path.name for path in Path("/tmp").glob(f"{OUTPUT_PREFIX}.*"))


_OWN_DEV_LOG = r"""
hold=$1; sock=$2; shift 2
# This machine's /dev, entry by entry (bind mounts: the same devices), on a tmpfs of
# this mount namespace's own, with /dev/log the server's syslog socket.
mount --rbind /dev "$hold" && mount -t tmpfs -o mode=755 ofl-dev /dev || exit 1
for entry in "$hold"/* "$hold"/.[!.]*; do
  [ -e "$entry" ] || [ -L "$entry" ] || continue
  name=${entry##*/}
  if [ -L "$entry" ]; then cp -P "$entry" "/dev/$name"
  elif [ -d "$entry" ]; then mkdir "/dev/$name" && mount --rbind "$entry" "/dev/$name"
  else : >"/dev/$name" && mount --bind "$entry" "/dev/$name"
  fi || exit 1
done
umount -l "$hold"
: >/dev/log && mount --bind "$sock" /dev/log || exit 1
exec "$@"
"""


class Syslog:
    """A server's /dev/log: a datagram socket drained by a thread of the pool into lines
    (each as `logger` or sudo sent it: "<PRI>TIME TAG: MESSAGE")."""

    def __init__(self, path: Path):
        self.path = path
        self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._socket.bind(str(path))
        os.chmod(path, 0o666)  # as a syslog's /dev/log: every user logs
        self._lines: list[str] = []
        self._lock = threading.Lock()
        self._closed = False
        threading.Thread(target=self._drain, name=f"syslog-{path.stem}", daemon=True).start()

    def _drain(self) -> None:
        while True:
            try:
                data = self._socket.recv(65536)
            except OSError:
                return  # closed at the pool's end
            if self._closed:
                return
            with self._lock:
                self._lines.append(data.decode(errors="replace").rstrip("\n"))

    def lines(self) -> list[str]:
        with self._lock:
            return list(self._lines)

    def close(self) -> None:
        self._closed = True
        self._socket.shutdown(socket.SHUT_RDWR)  # wakes the thread's recv
        self._socket.close()
        self.path.unlink(missing_ok=True)


class Rig:
    """A shape wired on the pool's servers, reached as `ssh <alias><name>` with the rig's
    ssh_config; `user`: log in as that non-root (ofl-) user, created with its home under
    the rig's folder, `sudo = true` in the hosts file and docs/real-hosts.md's sudoers
    snippet; None: log in as root."""

    def __init__(self, pool: ServerPool, shape: Shape, user: str | None = None):
        self.pool, self.shape, self.user = pool, shape, user
        self.folder = Path(tempfile.mkdtemp(prefix=f"offlab-rig-{shape.name}-"))
        self.servers = {name: pool.server(name) for name in shape.servers}
        self.baseline: dict[str, object] = {}

    @property
    def ssh_config(self) -> Path:
        return self.folder / "ssh_config"

    @property
    def hosts_file(self) -> Path:
        return self.folder / "hosts.toml"

    @property
    def sudoers(self) -> Path:
        return SUDOERS / (self.user or "")

    @property
    def uid(self) -> int:
        assert self.user is not None
        return pwd.getpwnam(self.user).pw_uid

    def alias(self, name: str) -> str:
        return f"{self.shape.alias}{name}"

    def test_devices(self) -> dict[str, tuple[str, ...]]:
        """Per server, the test devices the rig made there."""
        return self.shape.ports()

    def start(self) -> "Rig":
        self._wire()
        if self.user is not None:
            self._add_user()
        self.ssh_config.write_text("\n".join(self.pool.ssh_entry(self.alias(name), name, self.user or "root")
                                             for name in self.shape.servers))
        self.ssh_config.chmod(0o600)
        self.hosts_file.write_text(self.hosts_toml())
        self.baseline = self.state()
        return self

    def _wire(self) -> None:
        for left, right in self.shape.links:
            connect_veth(self.servers[left.server], left.device, self.servers[right.server], right.device)
            for port in (left, right):
                self.servers[port.server].add_address(port.device, port.address, 24)
                self.servers[port.server].set_link(port.device)
        for name, network, gateway in self.shape.routes:
            self.servers[name].add_route(network, gateway)
        for name in self.shape.forwarding_off:
            self.servers[name].sysctl("net.ipv4.ip_forward", "0")

    def hosts_toml(self) -> str:
        # Every "server" is a namespace of one kernel: said, as a user with such a setup must.
        text = f'ssh_config = "{self.ssh_config}"\nsame_kernel = true\nwatchdog_s = {WATCHDOG_S}\n'
        for pair, roles in self.shape.pairs:
            if pair is not None:
                text += f'\n[[pair]]\nname = "{pair}"\n'
            for role in roles:
                text += f'\n[{"pair." if pair else ""}{role.name}]\nssh = "{self.alias(role.port.server)}"\n'
                if role.interfaces:
                    text += f"interfaces = {json.dumps(list(role.interfaces))}\n"
                else:
                    text += (f'interface = "{role.port.device}"\naddress = "{role.port.address}"\n'
                             f'peer = "{role.peer}"\n')
                text += f"app_core = {role.app_core}\n" + ("sudo = true\n" if self.user and not role.interfaces else "")
        return text

    def _add_user(self) -> None:
        """The login user: no password (`*`: key only, not locked), its home and
        authorized key under the rig's folder, the documented sudoers snippet."""
        assert self.user is not None and self.user.startswith("ofl-")
        self._remove_user()  # a killed session's
        home = self.folder / "home"
        (home / ".ssh").mkdir(parents=True)
        os.chmod(self.folder, 0o711)
        run(["useradd", "--no-create-home", "--home-dir", str(home), "--shell", "/bin/sh", "--password", "*",
             "--user-group", self.user])
        (home / ".ssh" / "authorized_keys").write_text(self.pool.public_key)
        run(["chown", "-R", f"{self.user}:{self.user}", str(home)])
        self.set_sudoers()

    def set_sudoers(self, password: bool = False) -> None:
        """The user's sudoers file (checked by visudo before it is in place)."""
        assert self.user is not None
        draft = self.folder / "sudoers"
        draft.write_text(sudoers_snippet(self.user, password))
        run(["visudo", "-c", "-q", "-f", str(draft)])
        draft.chmod(0o440)
        shutil.move(draft, self.sudoers)

    def _remove_user(self) -> None:
        assert self.user is not None and self.user.startswith("ofl-")
        self.sudoers.unlink(missing_ok=True)
        try:
            pwd.getpwnam(self.user)
        except KeyError:
            return
        run(["userdel", self.user])

    def kill_sshd(self, name: str) -> None:
        """The host goes away: its sshd and every session it carries (the reset after the
        test starts it again)."""
        self.pool.kill_sshd(name)

    def state(self) -> dict[str, object]:
        """Everything a run or a test may change, read in the servers' namespaces: their
        devices; per test device its MTU, link state, addresses and ethtool features;
        routes (every table), rules, permanent neighbour entries, qdiscs and forwarding;
        on the controller, the login user's sudoers."""
        found: dict[str, object] = {}
        for name, devices in self.test_devices().items():
            server = self.servers[name]
            for device in devices:
                link = json.loads(server.ip("-j", "addr", "show", "dev", device).stdout)[0]
                found[device] = (link["mtu"], "UP" in link["flags"], server.run(["ethtool", "-k", device]).stdout,
                                 sorted(f"{a['local']}/{a['prefixlen']}" for a in link.get("addr_info", [])
                                        if a.get("scope") != "link"))  # link-local: from the random MAC
            found[f"{name}:devices"] = sorted(link["ifname"] for link in json.loads(server.ip("-j", "link", "show").stdout))
            # IPv4's every table (a policy route lives outside main) and the rules that pick
            # them; IPv6's main table (its local table holds the link-local addresses, which
            # a device made anew gets from a new random MAC)
            found[f"{name}:routes"] = server.ip("-4", "route", "show", "table", "all").stdout + server.ip("-6", "route", "show").stdout
            found[f"{name}:rules"] = server.ip("-4", "rule", "show").stdout + server.ip("-6", "rule", "show").stdout
            found[f"{name}:neigh"] = sorted(line for line in server.ip("neigh", "show").stdout.splitlines()
                                            if "PERMANENT" in line)
            # without the handles the kernel numbers anew for a device made anew
            found[f"{name}:qdiscs"] = re.sub(r"^(qdisc \S+) [0-9a-f]+:", r"\1", server.run(["tc", "qdisc", "show"]).stdout,
                                             flags=re.M)
            found[f"{name}:ip_forward"] = server.read_file("/proc/sys/net/ipv4/ip_forward").strip()
        found["tmp"] = _fwd_output_dirs()
        if self.user is not None:
            found["sudoers"] = self.sudoers.read_text() if self.sudoers.exists() else None
        return found

    def processes(self) -> dict[str, list[str]]:
        """What runs in each server's namespace besides its sshd: "comm (pid)"."""
        found = {}
        for name in self.servers:
            listed = []
            for pid in self.pool.pids(name):
                try:
                    comm = Path(f"/proc/{pid}/comm").read_text().strip()
                except OSError:
                    continue
                if comm != "sshd" and not comm.startswith("sshd-"):
                    listed.append(f"{comm} ({pid})")
            found[name] = listed
        return found

    def reset(self) -> list[str]:
        """Back to the rig as wired: everything a test started on the servers ended, a
        killed sshd started again, the journals and holds a failed test left removed.
        Returns what still differs from the wired rig (state keys), read again."""
        self.pool.end_sessions(self.shape.servers)
        for name in self.shape.servers:
            self.pool.server(name)
        for journal in JOURNAL_DIR.glob("*.json"):
            journal.unlink()
        for name in self.shape.servers:
            shutil.rmtree(self.pool.state_dir(name) / Path(SERVER_DIR).name, ignore_errors=True)
        for left in set(_fwd_output_dirs()) - set(self.baseline["tmp"]):
            shutil.rmtree(Path("/tmp") / left, ignore_errors=True)
        now = self.state()
        return sorted(key for key in self.baseline.keys() | now.keys() if self.baseline.get(key) != now.get(key))

    def stop(self) -> None:
        """Everything the rig's tests started on its servers ended, its test devices (with
        their addresses, routes and upper devices) deleted, its user and files removed; the
        servers stay for the next rig."""
        self.pool.end_sessions(self.shape.servers)
        if self.user is not None:
            self._remove_user()
        for name, devices in self.test_devices().items():
            for device in devices:
                if self.servers[name].has_link(device):
                    self.servers[name].ip("link", "del", device)
        shutil.rmtree(self.folder, ignore_errors=True)


class RigNotRestored(AssertionError):
    """A test left the servers other than the rig it was given."""


class Rigs:
    """The session's rigs: the servers start on the first test that asks for a rig; one
    shape (and login user) is wired at a time and stays wired while the tests asking for
    it follow one another."""

    def __init__(self) -> None:
        self.pool: ServerPool | None = None
        self.current: Rig | None = None

    @contextmanager
    def use(self, shape: Shape, user: str | None = None) -> Iterator[Rig]:
        """The rig for one test; after it, reset and checked (RigNotRestored names what the
        test left changed, and the rig's servers are made anew for the next test)."""
        if self.pool is None:
            self.pool = ServerPool()
        if self.current is not None and (self.current.shape, self.current.user) != (shape, user):
            self.current.stop()
            self.current = None
        if self.current is None:
            assert not list(JOURNAL_DIR.glob("*.json")), "a journal of real hosts is left"
            assert not Path(SERVER_DIR).exists(), "a server hold of an earlier test is left"
            self.current = Rig(self.pool, shape, user).start()
        rig = self.current
        try:
            yield rig
        finally:
            changed = rig.reset()
            if changed:
                rig.stop()
                self.pool.renew(shape.servers)
                self.current = None
                raise RigNotRestored(f"the test left the {shape.name} rig changed: {', '.join(changed)}")

    def close(self) -> None:
        """Every rig and server, key and management device gone."""
        if self.current is not None:
            self.current.stop()
            self.current = None
        if self.pool is not None:
            self.pool.stop()
            self.pool = None
