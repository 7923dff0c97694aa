"""Two stand-ins for a user's servers: each a network namespace running its own OpenSSH
server (Debian's openssh-server, started here with a throwaway host key, a throwaway
client key and a throwaway ssh config — nothing of this machine's ssh setup is read or
changed), reached from the root namespace over a management veth, and joined to the
other by a test link. The lab talks to them only as `ssh hosta` / `ssh hostb` would."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from offlab.hosts import LocalNamespace, connect_veth
from offlab.proc import run

SSHD = "/usr/sbin/sshd"
MGMT = {"a": ("ofl-ma", "mgmt0", "10.240.1.1", "10.240.1.2"), "b": ("ofl-mb", "mgmt0", "10.240.2.1", "10.240.2.2")}
"""Root-side device (ofl-, removed at the end), the server's end (inside the server's
namespace, so it goes with it; not ofl-: offlab refuses servers with ofl- devices it did
not name), addresses."""
WATCHDOG_S = 10
"""The servers restore themselves 10 s after the controller's last heartbeat (60 s by
default): short, so a test of it waits little."""
TEST = {"a": ("ofl-ta0", "10.241.0.1"), "b": ("ofl-tb0", "10.241.0.2")}


@dataclass
class SshLab:
    folder: Path
    servers: dict[str, LocalNamespace] = field(default_factory=dict)
    sshd: dict[str, subprocess.Popen] = field(default_factory=dict)

    @property
    def ssh_config(self) -> Path:
        return self.folder / "ssh_config"

    @property
    def hosts_file(self) -> Path:
        return self.folder / "hosts.toml"

    def start(self) -> "SshLab":
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege-separation dir
        key = self.folder / "id_ed25519"
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)])
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.folder / "host_key")])
        (self.folder / "authorized_keys").write_text((self.folder / "id_ed25519.pub").read_text())
        os.chmod(self.folder / "authorized_keys", 0o600)
        config = []
        for name in ("a", "b"):
            server = LocalNamespace(f"ssh{name}").create()
            self.servers[name] = server
            root_dev, server_dev, root_addr, server_addr = MGMT[name]
            run(["ip", "link", "add", root_dev, "type", "veth", "peer", "name", server_dev,
                 "netns", server.namespace])
            run(["ip", "addr", "add", f"{root_addr}/24", "dev", root_dev])
            run(["ip", "link", "set", root_dev, "up"])
            server.add_address(server_dev, server_addr, 24)
            server.set_link(server_dev)
            self._sshd(name, server, server_addr)
            config.append(f"Host host{name}\n  HostName {server_addr}\n  User root\n"
                          f"  IdentityFile {key}\n  IdentitiesOnly yes\n  StrictHostKeyChecking no\n"
                          "  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n")
        connect_veth(self.servers["a"], TEST["a"][0], self.servers["b"], TEST["b"][0])
        for name in ("a", "b"):
            device, address = TEST[name]
            self.servers[name].add_address(device, address, 24)
            self.servers[name].set_link(device)
        self.ssh_config.write_text("\n".join(config))
        self.hosts_file.write_text(self.hosts_toml())
        return self

    def _sshd(self, name: str, server: LocalNamespace, address: str) -> None:
        config = self.folder / f"sshd_{name}"
        config.write_text(
            f"ListenAddress {address}\nHostKey {self.folder / 'host_key'}\n"
            f"AuthorizedKeysFile {self.folder / 'authorized_keys'}\nPermitRootLogin prohibit-password\n"
            "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
            f"PidFile {self.folder / f'sshd_{name}.pid'}\nMaxSessions 50\nMaxStartups 50\n")
        self.sshd[name] = server.spawn([SSHD, "-D", "-e", "-f", str(config)])
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            probe = run(["ssh", "-F", str(self.ssh_config) if self.ssh_config.exists() else "/dev/null",
                         "-o", "BatchMode=yes", "-o", "ConnectTimeout=1", "-o", "StrictHostKeyChecking=no",
                         "-o", "UserKnownHostsFile=/dev/null", "-i", str(self.folder / "id_ed25519"),
                         f"root@{address}", "true"], check=False, timeout=5)
            if probe.returncode == 0:
                return
            time.sleep(0.1)
        raise RuntimeError(f"sshd in {server.namespace} did not answer: {probe.stderr}")

    def hosts_toml(self) -> str:
        # Both "servers" are namespaces of one kernel: said, as a user with such a setup must.
        return (f'ssh_config = "{self.ssh_config}"\nsame_kernel = true\nwatchdog_s = {WATCHDOG_S}\n\n'
                '[sender]\nssh = "hosta"\ninterface = "ofl-ta0"\naddress = "10.241.0.1"\n'
                'peer = "10.241.0.2"\napp_core = 0\n\n'
                '[receiver]\nssh = "hostb"\ninterface = "ofl-tb0"\naddress = "10.241.0.2"\n'
                'peer = "10.241.0.1"\napp_core = 1\n')

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

    def stop(self) -> None:
        for name, process in self.sshd.items():
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
        for root_dev, *_ in MGMT.values():
            run(["ip", "link", "del", root_dev], check=False)
        shutil.rmtree(self.folder, ignore_errors=True)


def ssh_lab() -> SshLab:
    return SshLab(Path(tempfile.mkdtemp(prefix="offlab-sshlab-"))).start()
