"""Four stand-ins for a team's servers, two sender/receiver pairs: the sshlab.py rig
(each server a namespace running its own OpenSSH server with throwaway keys, reached
over a management veth) with four servers, joined pairwise by test links, and a fleet
file naming both pairs (campaign.py). Names and addresses differ from sshlab's, so the
two rigs never meet."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from pathlib import Path

from offlab.hosts import LocalNamespace, connect_veth
from offlab.proc import run

from .sshlab import WATCHDOG_S, SshLab

PAIRS = {"pair-ab": ("a", "b"), "pair-cd": ("c", "d")}


def _mgmt(index: int, name: str) -> tuple[str, str, str, str]:
    # The server's end is not ofl-: offlab refuses a server with ofl- devices it did not name.
    return f"ofl-mf{name}", "mgmt0", f"10.242.{index}.1", f"10.242.{index}.2"


class SshFleet(SshLab):
    def start(self) -> "SshFleet":
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        key = self.folder / "id_ed25519"
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)])
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.folder / "host_key")])
        (self.folder / "authorized_keys").write_text((self.folder / "id_ed25519.pub").read_text())
        os.chmod(self.folder / "authorized_keys", 0o600)
        config = []
        for index, name in enumerate("abcd", 1):
            server = LocalNamespace(f"fleet{name}").create()
            self.servers[name] = server
            root_dev, server_dev, root_addr, server_addr = _mgmt(index, name)
            run(["ip", "link", "add", root_dev, "type", "veth", "peer", "name", server_dev,
                 "netns", server.namespace])
            run(["ip", "addr", "add", f"{root_addr}/24", "dev", root_dev])
            run(["ip", "link", "set", root_dev, "up"])
            server.add_address(server_dev, server_addr, 24)
            server.set_link(server_dev)
            self._sshd(name, server, server_addr)
            config.append(f"Host fleet{name}\n  HostName {server_addr}\n  User root\n"
                          f"  IdentityFile {key}\n  IdentitiesOnly yes\n  StrictHostKeyChecking no\n"
                          "  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n")
        for number, (left, right) in enumerate(PAIRS.values(), 1):
            connect_veth(self.servers[left], f"ofl-t{left}0", self.servers[right], f"ofl-t{right}0")
            for name, host in ((left, 1), (right, 2)):
                self.servers[name].add_address(f"ofl-t{name}0", f"10.243.{number}.{host}", 24)
                self.servers[name].set_link(f"ofl-t{name}0")
        self.ssh_config.write_text("\n".join(config))
        self.hosts_file.write_text(self.hosts_toml())
        return self

    def _sshd(self, name: str, server: LocalNamespace, address: str) -> None:
        """Each pair's servers get a /var/lib/offlab of their own (a private mount for
        their sshd and all it starts), as two real servers have two disks: the servers'
        run holds and journals of the two pairs must not meet in one directory."""
        state = self.folder / f"state-{_pair_of(name)}"
        state.mkdir(exist_ok=True)
        Path("/var/lib/offlab").mkdir(parents=True, exist_ok=True)
        real = server.spawn
        server.spawn = lambda args, **kw: real(  # type: ignore[method-assign]
            ["unshare", "--mount", "--propagation", "private", "sh", "-c",
             f'mount --bind "{state}" /var/lib/offlab && exec "$@"', "sh", *args], **kw)
        try:
            super()._sshd(name, server, address)
        finally:
            server.spawn = real  # type: ignore[method-assign]

    def hosts_toml(self) -> str:
        # Every "server" is a namespace of one kernel: said, as a user with such a setup must.
        text = f'ssh_config = "{self.ssh_config}"\nsame_kernel = true\nwatchdog_s = {WATCHDOG_S}\n'
        for number, (pair, (left, right)) in enumerate(PAIRS.items(), 1):
            text += f'\n[[pair]]\nname = "{pair}"\n'
            for role, name, host, peer, core in (("sender", left, 1, 2, 0), ("receiver", right, 2, 1, 1)):
                text += (f'[pair.{role}]\nssh = "fleet{name}"\ninterface = "ofl-t{name}0"\n'
                         f'address = "10.243.{number}.{host}"\npeer = "10.243.{number}.{peer}"\napp_core = {core}\n')
        return text

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
        for index, name in enumerate("abcd", 1):
            run(["ip", "link", "del", _mgmt(index, name)[0]], check=False)
        shutil.rmtree(self.folder, ignore_errors=True)


def _pair_of(name: str) -> str:
    return next(pair for pair, names in PAIRS.items() if name in names)


def ssh_fleet() -> SshFleet:
    return SshFleet(Path(tempfile.mkdtemp(prefix="offlab-sshfleet-"))).start()
