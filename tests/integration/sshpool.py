"""The stand-ins for a user's servers that every SSH rig of the session shares: each a
network namespace running its own OpenSSH server (Debian's openssh-server, started here
with a throwaway host key, a throwaway client key — nothing of this machine's ssh setup is
read or changed), reached from the root namespace over a management veth.

The servers start once per pytest session, when a rig first asks for them (sshlab.py's
two, routerlab.py's three, sshfleet.py's four), and stop at the session's end
(conftest.py). A rig only wires them: its test links, routes and ssh_config; it removes
those when it stops, and the next rig finds the servers as a fresh start would, except
for the sshd a test killed, which is started again.

The servers' namespaces are owned by a keeper process (`tail --pid=<pytest>`), not by
pytest itself: the modules that check "no namespace of this process is left"
(our_namespaces()) keep checking exactly their own, and when pytest is killed the keeper
ends with it, so the next session's sweep_leftovers() removes the servers as stale."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from offlab.hosts import LocalNamespace
from offlab.proc import run

SSHD = "/usr/sbin/sshd"


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
    # The fleet's second pair (sshfleet.py): its run holds and journals must not meet the
    # first pair's in one directory, as they would not on two real pairs of servers.
    "c": ServerSpec("ofl-mc", "10.240.3.1", "10.240.3.2", state="pair-cd"),
    "d": ServerSpec("ofl-md", "10.240.4.1", "10.240.4.2", state="pair-cd"),
    "r": ServerSpec("ofl-mr", "10.240.5.1", "10.240.5.2"),
}


class ServerPool:
    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="offlab-sshpool-"))
        self.servers: dict[str, LocalNamespace] = {}
        self.sshd: dict[str, subprocess.Popen] = {}
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.key)])
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.folder / "host_key")])
        (self.folder / "authorized_keys").write_text((self.folder / "id_ed25519.pub").read_text())
        os.chmod(self.folder / "authorized_keys", 0o600)
        self.keeper = subprocess.Popen(["tail", f"--pid={os.getpid()}", "-f", "/dev/null"],
                                       stdout=subprocess.DEVNULL)
        # Traversable (not readable) by a rig's non-root login user (sshlab.py): the
        # syslog sockets are here; the keys stay 0600.
        os.chmod(self.folder, 0o711)
        self.syslogs: dict[str, Syslog] = {}

    @property
    def key(self) -> Path:
        return self.folder / "id_ed25519"

    def server(self, name: str) -> LocalNamespace:
        """Server `name`, started on first use; its sshd started again if a test killed it."""
        if name not in self.servers:
            self._create(name)
        if self.sshd[name].poll() is not None:
            self._start_sshd(name)
        return self.servers[name]

    @property
    def public_key(self) -> str:
        return (self.folder / "id_ed25519.pub").read_text()

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
        self.servers[name] = server
        run(["ip", "link", "add", spec.root_dev, "type", "veth", "peer", "name", "mgmt0",
             "netns", server.namespace])
        run(["ip", "addr", "add", f"{spec.root_addr}/24", "dev", spec.root_dev])
        run(["ip", "link", "set", spec.root_dev, "up"])
        server.add_address("mgmt0", spec.address, 24)
        server.set_link("mgmt0")
        server.set_link("lo")
        if spec.syslog:
            self.syslogs[name] = Syslog(self.folder / f"syslog-{name}.sock")
        self._start_sshd(name)

    def _start_sshd(self, name: str) -> None:
        spec, server = SERVERS[name], self.servers[name]
        config = self.folder / f"sshd_{name}"
        config.write_text(
            f"ListenAddress {spec.address}\nHostKey {self.folder / 'host_key'}\n"
            # root's key here; a rig's login user's in its own home (sshlab.py)
            f"AuthorizedKeysFile {self.folder / 'authorized_keys'} .ssh/authorized_keys\nPermitRootLogin prohibit-password\n"
            "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
            f"PidFile {self.folder / f'sshd_{name}.pid'}\nMaxSessions 50\nMaxStartups 50\n")
        command = [SSHD, "-D", "-e", "-f", str(config)]
        # Both below (state, syslog): a mount namespace of the server's own, a slave of
        # this one — its own mounts stay inside, but what this machine mounts later still
        # reaches it (a named network namespace a test adds: /run/netns/NAME is a mount),
        # as a real server sees every namespace made on it. A private one saw only those
        # made before it started.
        if spec.state is not None:
            state = self.folder / f"state-{spec.state}"
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

    def kill_sshd(self, name: str) -> None:
        """The host goes away: its sshd and every session it carries."""
        self.sshd[name].send_signal(signal.SIGKILL)
        self.sshd[name].wait()
        for pid in run(["ip", "netns", "pids", self.servers[name].namespace], check=False).stdout.split():
            try:
                if "sshd" in Path(f"/proc/{pid}/comm").read_text():
                    os.kill(int(pid), signal.SIGKILL)
            except (FileNotFoundError, ProcessLookupError):
                pass  # it ended between the listing and here: gone is what we want

    def end_sessions(self, names) -> None:
        """Everything running on servers `names` but their listening sshd: what a rig's
        tests started there (iperf3, watchdogs, QEMU, sessions), as a fresh start would."""
        for name in names:
            listener = self.sshd[name].pid
            for pid in run(["ip", "netns", "pids", self.servers[name].namespace], check=False).stdout.split():
                if int(pid) == listener:
                    continue
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass  # ended on its own meanwhile

    def stop(self) -> None:
        for process in self.sshd.values():
            if process.poll() is None:
                process.kill()
                process.wait()
        for server in self.servers.values():
            for pid in run(["ip", "netns", "pids", server.namespace], check=False).stdout.split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass
            server.remove()
        for name in self.servers:
            run(["ip", "link", "del", SERVERS[name].root_dev], check=False)
        for syslog in self.syslogs.values():
            syslog.close()
        self.keeper.kill()
        self.keeper.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


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


_POOL: ServerPool | None = None


def pool() -> ServerPool:
    """The session's servers (made on first use)."""
    global _POOL
    if _POOL is None:
        _POOL = ServerPool()
    return _POOL


def stop_pool() -> None:
    """At the session's end (conftest.py): every server, key and management device gone."""
    global _POOL
    if _POOL is not None:
        _POOL.stop()
        _POOL = None
