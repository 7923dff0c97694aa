"""A host that is a network namespace on this machine (`ofl-<pid>-<role>`), the lab's
default. Commands run through `ip netns exec`, which execs them, so a spawned process's
pid is the command's own (its /proc/<pid>/net is the namespace's view)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Sequence

from pyroute2 import netns

from ..proc import DEFAULT_TIMEOUT_S, Completed, run, spawn
from ..runscope import RUNTIME_ROOT
from .naming import namespace_name
from .base import Host

# Files that read the same from any namespace (per-process and per-machine ones): read
# directly, without a `cat` inside the namespace — the lab polls some of them every
# millisecond. Everything else (/proc/net, /sys/class/net) is read inside.
_GLOBAL = re.compile(r"^/proc/(\d+/(stat|comm|net/(tcp6?|udp6?))|stat|cpuinfo)$")


def in_netns(namespace: str, args: Sequence[str]) -> list[str]:
    """The argument list that runs `args` inside a named network namespace. `ip netns
    exec` execs the command, so the pid of the process is the command's own."""
    return ["ip", "netns", "exec", namespace, *args]


class LocalNamespace(Host):
    machine = "local"

    def __init__(self, role: str, pid: int | None = None):
        self.name = role
        self.namespace = namespace_name(role, pid)

    def create(self) -> "LocalNamespace":
        netns.create(self.namespace)
        self.run(["ip", "link", "set", "lo", "up"])
        return self

    def remove(self) -> None:
        if self.namespace in netns.listnetns():
            netns.remove(self.namespace)

    def run(self, args: Sequence[str], *, timeout: float = DEFAULT_TIMEOUT_S, check: bool = True,
            input_text: str | None = None, root: bool | None = None) -> Completed:
        return run(in_netns(self.namespace, args), timeout=timeout, check=check, input_text=input_text)

    def spawn(self, args: Sequence[str], *, capture_stdout: bool = False) -> subprocess.Popen[str]:
        return spawn(in_netns(self.namespace, args), capture_stdout=capture_stdout)

    def scratch_dir(self) -> str:
        """The run's runtime directory (runscope.py): removed with the run, or by the
        next one after a kill. A namespace shares this machine's files."""
        runtime = RUNTIME_ROOT / f"run-{os.getpid()}"
        return str(runtime) if runtime.is_dir() else "/tmp"

    def read_file(self, path: str) -> str:
        if _GLOBAL.match(path):
            return Path(path).read_text()
        return super().read_file(path)

    def read_files(self, paths: Sequence[str]) -> dict[str, str]:
        if all(_GLOBAL.match(path) for path in paths):  # no command at all
            return {path: self.read_file(path) for path in paths}
        return super().read_files(paths)

    def __repr__(self) -> str:
        return f"LocalNamespace({self.name!r}, {self.namespace!r})"


VETH_QDISC = ("pfifo_fast",)
"""The queue each veth end gets, as a NIC's transmit queues have one. veth's default is
noqueue: when the peer's receive ring (256 frames, used once GRO or a non-TSO path puts
veth on NAPI) is full, the frame is dropped and counted in tx_drop — 360–720 drops and
as many retransmits per 3 s TCP stream with TSO off, measured here on kernel 6.18.
With a queue the kernel stops the transmit queue instead (veth's ring backpressure,
Linux 6.16+) and nothing is lost, as on a NIC pair; on older kernels it changes
nothing."""


def connect_veth(left: LocalNamespace, left_dev: str, right: LocalNamespace, right_dev: str) -> None:
    """A veth pair between two local namespaces, each end with a NIC's transmit queue
    (VETH_QDISC); the peer is created directly in its namespace, never in the root one,
    not even for a moment."""
    left.ip("link", "add", left_dev, "type", "veth", "peer", "name", right_dev, "netns", right.namespace)
    for host, device in ((left, left_dev), (right, right_dev)):
        host.run(["tc", "qdisc", "replace", "dev", device, "root", *VETH_QDISC])
