"""Names of everything the lab creates, and the sweep of a killed run's leftovers.

Namespaces are `ofl-<pid>-<role>` (pid of the creating process); devices are `ofl-…`
and live only inside those namespaces, so deleting a namespace deletes its devices.
The sweep removes a namespace only when its pid is no longer alive — never one that
belongs to another running offlab.
"""

from __future__ import annotations

import os
import re
import signal
from typing import Callable, Iterable

from ..proc import run
from ..runscope import pid_alive

PREFIX = "ofl"
IFNAMSIZ = 15
_NAMESPACE = re.compile(rf"^{PREFIX}-(\d+)-([a-z0-9]+)$")


def namespace_name(role: str, pid: int | None = None) -> str:
    if not re.fullmatch(r"[a-z0-9]+", role):
        raise ValueError(f"namespace role {role!r} must be lowercase letters and digits")
    return f"{PREFIX}-{os.getpid() if pid is None else pid}-{role}"


def device_name(suffix: str) -> str:
    name = f"{PREFIX}-{suffix}"
    if len(name) > IFNAMSIZ:
        raise ValueError(f"device name {name!r} is longer than {IFNAMSIZ} characters")
    return name


TX_DEV = device_name("v0")
"""The bare topology's sender device (and the tunnels' underlay): counters and reports name it."""
RX_DEV = device_name("v1")
"""The bare topology's receiver device."""
WIRE_TX = device_name("w0")
"""The wire namespace's device facing the sender."""
WIRE_RX = device_name("w1")
"""The wire namespace's device facing the receiver: it segments (no TSO, GSO on)."""


def parse_namespace(name: str) -> tuple[int, str] | None:
    """(pid, role) of one of our namespaces, or None for anybody else's."""
    match = _NAMESPACE.match(name)
    return (int(match.group(1)), match.group(2)) if match else None


def stale_namespaces(names: Iterable[str], alive: Callable[[int], bool] = pid_alive) -> list[str]:
    """Our namespaces whose creating process is gone."""
    stale = []
    for name in names:
        parsed = parse_namespace(name)
        if parsed is not None and not alive(parsed[0]):
            stale.append(name)
    return sorted(stale)


def our_namespaces(pid: int | None = None) -> list[str]:
    """Namespaces created by `pid` (default: this process) that exist right now."""
    from pyroute2 import netns  # a third of a second: reports name devices without it
    wanted = os.getpid() if pid is None else pid
    return sorted(n for n in netns.listnetns() if (p := parse_namespace(n)) and p[0] == wanted)


def sweep_leftovers() -> list[str]:
    """Delete namespaces left by offlab runs that were killed, and stop the processes
    (iperf3 servers) still running in them; return the namespaces' names."""
    from pyroute2 import netns
    removed = []
    for name in stale_namespaces(netns.listnetns()):
        for pid in run(["ip", "netns", "pids", name], check=False).stdout.split():
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass  # exited on its own meanwhile
        netns.remove(name)
        removed.append(name)
    return removed
