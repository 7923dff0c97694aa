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
import subprocess
import tempfile
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


SERVERS = {
    "a": ServerSpec("ofl-ma", "10.240.1.1", "10.240.1.2"),
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

    def ssh_entry(self, alias: str, name: str) -> str:
        """An ssh_config stanza reaching server `name` as `alias`."""
        return (f"Host {alias}\n  HostName {SERVERS[name].address}\n  User root\n"
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
        self._start_sshd(name)

    def _start_sshd(self, name: str) -> None:
        spec, server = SERVERS[name], self.servers[name]
        config = self.folder / f"sshd_{name}"
        config.write_text(
            f"ListenAddress {spec.address}\nHostKey {self.folder / 'host_key'}\n"
            f"AuthorizedKeysFile {self.folder / 'authorized_keys'}\nPermitRootLogin prohibit-password\n"
            "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
            f"PidFile {self.folder / f'sshd_{name}.pid'}\nMaxSessions 50\nMaxStartups 50\n")
        command = [SSHD, "-D", "-e", "-f", str(config)]
        if spec.state is not None:
            state = self.folder / f"state-{spec.state}"
            state.mkdir(exist_ok=True)
            Path("/var/lib/offlab").mkdir(parents=True, exist_ok=True)
            command = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                       f'mount --bind "{state}" /var/lib/offlab && exec "$@"', "sh", *command]
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
        self.keeper.kill()
        self.keeper.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


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
