"""The interface of a place where commands run, and the link configuration every host
gets from it by running iproute2 (`ip -j` for what it reads back): the same commands
work in a local namespace and on a server reached over SSH."""

from __future__ import annotations

import json
import subprocess
from abc import ABC, abstractmethod
from typing import Any, Sequence

from ..proc import DEFAULT_TIMEOUT_S, Completed, ProcessError
from ..proc import stop as stop_process
from .batch import run_reads
from .errors import HostError

__all__ = ["Host", "HostError"]


class Host(ABC):
    """One host of a topology. `name` is its role there ("tx", "rx", "a", "r", "b", "m"),
    which also prefixes its counters in a sample ("r:Ip.InDiscards")."""

    name: str
    machine: str
    """Hosts on one machine share its cores and /proc/stat (local namespaces: "local")."""

    @abstractmethod
    def run(self, args: Sequence[str], *, timeout: float = DEFAULT_TIMEOUT_S, check: bool = True,
            input_text: str | None = None, root: bool | None = None) -> Completed:
        """Run a command on the host to completion. `root`: whether it needs root where the
        host can tell (a server with `sudo = true`: hosts/privilege.py decides when None;
        False for a shell script that only reads); hosts that run everything as one user
        ignore it."""

    @abstractmethod
    def spawn(self, args: Sequence[str], *, capture_stdout: bool = False) -> subprocess.Popen[str]:
        """Start a long-running command; its `pid` is the command's pid on the host."""

    def stop(self, process: subprocess.Popen[str], grace_s: float = 2.0) -> None:
        stop_process(process, grace_s=grace_s)

    def scratch_dir(self) -> str:
        """Where a command on this host may leave a file for the lab to read back."""
        return "/tmp"

    def read_file(self, path: str) -> str:
        """A file as the host sees it (its /proc/net, its /sys/class/net); a file that is
        not there (a process that ended) is FileNotFoundError, as for a local read."""
        done = self.run(["cat", path], timeout=10.0, check=False)
        if done.returncode != 0:
            raise FileNotFoundError(f"{self.name}: {path}: {done.stderr.strip()}")
        return done.stdout

    def read_files(self, paths: Sequence[str]) -> dict[str, str]:
        """Several files as `read_file` reads each, in one command on the host (one SSH
        round trip, hosts/batch.py); any file not there is FileNotFoundError."""
        found: dict[str, str] = {}
        for path, done in zip(paths, run_reads(self, [["cat", path] for path in paths]), strict=True):
            if done.returncode != 0:
                raise FileNotFoundError(f"{self.name}: {path}: {done.stderr.strip()}")
            found[path] = done.stdout
        return found

    def write_file(self, path: str, text: str, check: bool = True) -> bool:
        """Write a file on the host (sysctl, RPS masks); False if `check` is off and it failed."""
        return self.run(["tee", path], input_text=text, check=check).returncode == 0

    # --- links, through iproute2 ----------------------------------------------------------

    def ip(self, *args: str, check: bool = True) -> Completed:
        return self.run(["ip", *args], check=check)

    def links(self) -> list[dict[str, Any]]:
        return json.loads(self.ip("-j", "link", "show").stdout or "[]")

    def has_link(self, device: str) -> bool:
        return any(link.get("ifname") == device for link in self.links())

    def set_features(self, device: str, pairs: Sequence[str]) -> Completed:
        """`ethtool -K device name on|off …` (the status is the caller's to judge: a
        driver may refuse a feature)."""
        return self.run(["ethtool", "-K", device, *pairs], check=False)

    def set_link(self, device: str, *, mtu: int | None = None, up: bool = True) -> None:
        if mtu is not None:
            self.ip("link", "set", "dev", device, "mtu", str(mtu))
        self.ip("link", "set", "dev", device, "up" if up else "down")

    def add_address(self, device: str, address: str, prefixlen: int) -> None:
        self.ip("addr", "add", f"{address}/{prefixlen}", "dev", device)

    def del_address(self, device: str, address: str, prefixlen: int) -> None:
        self.ip("addr", "del", f"{address}/{prefixlen}", "dev", device)

    def addresses(self, device: str) -> list[str]:
        found = json.loads(self.ip("-j", "addr", "show", "dev", device).stdout or "[]")
        return [a["local"] for link in found for a in link.get("addr_info", [])]

    def add_vxlan(self, device: str, vni: int, local: str, remote: str, port: int, *,
                  underlay: str | None = None, udp_csum: bool = False) -> None:
        args = ["link", "add", device, "type", "vxlan", "id", str(vni), "local", local,
                "remote", remote, "dstport", str(port)]
        if underlay is not None:
            args += ["dev", underlay]
        args.append("udpcsum" if udp_csum else "noudpcsum")
        self.ip(*args)

    def add_route(self, network: str, gateway: str) -> None:
        self.ip("route", "add", network, "via", gateway)

    def delete_link(self, device: str) -> None:
        if self.has_link(device):
            self.ip("link", "del", device)

    def sysctl(self, key: str, value: str) -> None:
        self.run(["sysctl", "-q", "-w", f"{key}={value}"])

    def describe_failure(self, error: ProcessError) -> str:
        return f"{self.name}: {error}"
