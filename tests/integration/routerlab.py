"""Three stand-ins for a user's servers, A ⇄ R ⇄ B: three servers of the session's pool
(sshpool.py: each a namespace running its own OpenSSH server with throwaway keys,
reached from the root namespace over a management veth), the router between the other
two on two test links. A and B are on two networks, each routed to the other through R,
as a user's would be; R's IP forwarding starts off, so a run needs --allow-forwarding."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from offlab.hosts import connect_veth
from offlab.proc import run

from .sshlab import SshLab

LINKS = (("a", "ofl-3a0", "10.243.1.1", "r", "ofl-3r0", "10.243.1.2"),
         ("r", "ofl-3r1", "10.243.2.1", "b", "ofl-3b0", "10.243.2.2"))
ROUTES = {"a": ("10.243.2.0/24", "10.243.1.2"), "b": ("10.243.1.0/24", "10.243.2.1")}
TEST_DEVICES = {"a": ("ofl-3a0",), "r": ("ofl-3r0", "ofl-3r1"), "b": ("ofl-3b0",)}
WATCHDOG_S = 10


class RouterLab(SshLab):
    """Three servers: hosta (sender), hostr (router), hostb (receiver)."""

    NAMES = ("a", "r", "b")

    def wire(self) -> None:
        for left, left_dev, left_addr, right, right_dev, right_addr in LINKS:
            connect_veth(self.servers[left], left_dev, self.servers[right], right_dev)
            for name, device, address in ((left, left_dev, left_addr), (right, right_dev, right_addr)):
                self.servers[name].add_address(device, address, 24)
                self.servers[name].set_link(device)
        for name, (network, gateway) in ROUTES.items():
            self.servers[name].add_route(network, gateway)
        self.servers["r"].sysctl("net.ipv4.ip_forward", "0")

    def test_devices(self) -> dict[str, tuple[str, ...]]:
        return TEST_DEVICES

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

def router_lab() -> RouterLab:
    return RouterLab(Path(tempfile.mkdtemp(prefix="offlab-routerlab-"))).start()
