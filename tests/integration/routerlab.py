"""Three stand-ins for a user's servers, A ⇄ R ⇄ B: the two-server rig of sshlab.py (each
"server" a namespace running its own OpenSSH server with throwaway keys, reached from
the root namespace over a management veth) with a third one, the router, between them
on two test links. A and B are on two networks, each routed to the other through R, as
a user's would be; R's IP forwarding starts off, so a run needs --allow-forwarding."""

from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
from pathlib import Path

from offlab.hosts import LocalNamespace, connect_veth
from offlab.proc import run

from .sshlab import SshLab

MGMT3 = {"a": ("ofl-m3a", "10.242.1.1", "10.242.1.2"), "r": ("ofl-m3r", "10.242.2.1", "10.242.2.2"),
         "b": ("ofl-m3b", "10.242.3.1", "10.242.3.2")}
"""Root-side management device (the server's end is `mgmt0`, not ofl-: offlab refuses a
server with ofl- devices it did not name), root address, server address."""
LINKS = (("a", "ofl-3a0", "10.243.1.1", "r", "ofl-3r0", "10.243.1.2"),
         ("r", "ofl-3r1", "10.243.2.1", "b", "ofl-3b0", "10.243.2.2"))
ROUTES = {"a": ("10.243.2.0/24", "10.243.1.2"), "b": ("10.243.1.0/24", "10.243.2.1")}
TEST_DEVICES = {"a": ("ofl-3a0",), "r": ("ofl-3r0", "ofl-3r1"), "b": ("ofl-3b0",)}
WATCHDOG_S = 10


class RouterLab(SshLab):
    """Three servers: hosta (sender), hostr (router), hostb (receiver)."""

    def start(self) -> "RouterLab":
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        key = self.folder / "id_ed25519"
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)])
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.folder / "host_key")])
        (self.folder / "authorized_keys").write_text((self.folder / "id_ed25519.pub").read_text())
        os.chmod(self.folder / "authorized_keys", 0o600)
        config = []
        for name, (root_dev, root_addr, server_addr) in MGMT3.items():
            server = LocalNamespace(f"ssh3{name}").create()
            self.servers[name] = server
            run(["ip", "link", "add", root_dev, "type", "veth", "peer", "name", "mgmt0", "netns", server.namespace])
            run(["ip", "addr", "add", f"{root_addr}/24", "dev", root_dev])
            run(["ip", "link", "set", root_dev, "up"])
            server.add_address("mgmt0", server_addr, 24)
            server.set_link("mgmt0")
            server.set_link("lo")
            self._sshd(name, server, server_addr)
            config.append(f"Host host{name}\n  HostName {server_addr}\n  User root\n"
                          f"  IdentityFile {key}\n  IdentitiesOnly yes\n  StrictHostKeyChecking no\n"
                          "  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n")
        for left, left_dev, left_addr, right, right_dev, right_addr in LINKS:
            connect_veth(self.servers[left], left_dev, self.servers[right], right_dev)
            for name, device, address in ((left, left_dev, left_addr), (right, right_dev, right_addr)):
                self.servers[name].add_address(device, address, 24)
                self.servers[name].set_link(device)
        for name, (network, gateway) in ROUTES.items():
            self.servers[name].add_route(network, gateway)
        self.servers["r"].sysctl("net.ipv4.ip_forward", "0")
        self.ssh_config.write_text("\n".join(config))
        os.chmod(self.ssh_config, 0o600)
        self.hosts_file.write_text(self.hosts_toml())
        return self

    def hosts_toml(self) -> str:
        # Three namespaces of one kernel: said, as a user with such a setup must.
        return (f'ssh_config = "{self.ssh_config}"\nsame_kernel = true\nwatchdog_s = {WATCHDOG_S}\n\n'
                '[sender]\nssh = "hosta"\ninterface = "ofl-3a0"\naddress = "10.243.1.1"\n'
                'peer = "10.243.2.2"\napp_core = 0\n\n'
                '[receiver]\nssh = "hostb"\ninterface = "ofl-3b0"\naddress = "10.243.2.2"\n'
                'peer = "10.243.1.1"\napp_core = 1\n\n'
                '[router]\nssh = "hostr"\ninterfaces = ["ofl-3r0", "ofl-3r1"]\napp_core = 1\n')

    def state(self) -> dict[str, object]:
        """Everything a run may change on the three servers, read in their namespaces:
        per test interface MTU, link state and ethtool features; R's forwarding; A's
        and B's routes and neighbour entries toward the test networks."""
        found: dict[str, object] = {}
        for name, devices in TEST_DEVICES.items():
            server = self.servers[name]
            for device in devices:
                link = json.loads(server.ip("-j", "link", "show", "dev", device).stdout)[0]
                features = server.run(["ethtool", "-k", device]).stdout
                found[device] = (link["mtu"], "UP" in link["flags"], features)
            found[f"{name}:routes"] = server.ip("route", "show").stdout
            found[f"{name}:neigh"] = sorted(line for line in server.ip("neigh", "show").stdout.splitlines()
                                            if "PERMANENT" in line)
            found[f"{name}:devices"] = sorted(link["ifname"] for link in json.loads(server.ip("-j", "link", "show").stdout))
        found["r:ip_forward"] = self.servers["r"].read_file("/proc/sys/net/ipv4/ip_forward").strip()
        return found

    def processes(self) -> dict[str, list[str]]:
        """What runs in each server's namespace besides its sshd: "comm (pid)"."""
        found = {}
        for name, server in self.servers.items():
            listed = []
            for pid in run(["ip", "netns", "pids", server.namespace], check=False).stdout.split():
                try:
                    comm = Path(f"/proc/{pid}/comm").read_text().strip()
                except OSError:
                    continue
                if comm != "sshd" and not comm.startswith("sshd-"):
                    listed.append(f"{comm} ({pid})")
            found[name] = listed
        return found

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
        for root_dev, *_ in MGMT3.values():
            run(["ip", "link", "del", root_dev], check=False)
        shutil.rmtree(self.folder, ignore_errors=True)


def router_lab() -> RouterLab:
    return RouterLab(Path(tempfile.mkdtemp(prefix="offlab-routerlab-"))).start()
