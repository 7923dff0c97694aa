"""Four stand-ins for a team's servers, two sender/receiver pairs: four servers of the
session's pool (sshpool.py: each a namespace running its own OpenSSH server with
throwaway keys, reached over a management veth), joined pairwise by test links, and a
fleet file naming both pairs (campaign.py). The second pair's servers have a
/var/lib/offlab of their own (sshpool.SERVERS), as two real pairs have their own disks:
the two pairs' run holds and journals never meet in one directory."""

from __future__ import annotations

import tempfile
from pathlib import Path

from offlab.hosts import connect_veth

from .sshlab import WATCHDOG_S, SshLab

PAIRS = {"pair-ab": ("a", "b"), "pair-cd": ("c", "d")}


class SshFleet(SshLab):
    NAMES = ("a", "b", "c", "d")

    def alias(self, name: str) -> str:
        return f"fleet{name}"

    def wire(self) -> None:
        for number, (left, right) in enumerate(PAIRS.values(), 1):
            connect_veth(self.servers[left], f"ofl-t{left}0", self.servers[right], f"ofl-t{right}0")
            for name, host in ((left, 1), (right, 2)):
                self.servers[name].add_address(f"ofl-t{name}0", f"10.243.{number}.{host}", 24)
                self.servers[name].set_link(f"ofl-t{name}0")

    def test_devices(self) -> dict[str, tuple[str, ...]]:
        return {name: (f"ofl-t{name}0",) for name in self.NAMES}

    def hosts_toml(self) -> str:
        # Every "server" is a namespace of one kernel: said, as a user with such a setup must.
        text = f'ssh_config = "{self.ssh_config}"\nsame_kernel = true\nwatchdog_s = {WATCHDOG_S}\n'
        for number, (pair, (left, right)) in enumerate(PAIRS.items(), 1):
            text += f'\n[[pair]]\nname = "{pair}"\n'
            for role, name, host, peer, core in (("sender", left, 1, 2, 0), ("receiver", right, 2, 1, 1)):
                text += (f'[pair.{role}]\nssh = "fleet{name}"\ninterface = "ofl-t{name}0"\n'
                         f'address = "10.243.{number}.{host}"\npeer = "10.243.{number}.{peer}"\napp_core = {core}\n')
        return text


def ssh_fleet() -> SshFleet:
    return SshFleet(Path(tempfile.mkdtemp(prefix="offlab-sshfleet-"))).start()
