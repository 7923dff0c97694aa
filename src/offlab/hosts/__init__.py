"""Where the lab's commands run. A `Host` runs commands, spawns and stops processes,
reads and writes files and configures links; topologies, offload control, traffic,
CPU sampling and counters all go through it and never spell `ip netns exec` or `ssh`.

Implementations: `LocalNamespace` (a network namespace on this machine, the default
lab); a host reached over SSH joins them on the same interface.

`LocalNamespace` and `connect_veth` are imported on first use (PEP 562): they load
pyroute2, a second of start-up that the reading commands, which import the hosts
file's and the guards' modules of this package, do not need."""

from .base import Host, HostError

__all__ = ["Host", "HostError", "LocalNamespace", "connect_veth"]


def __getattr__(name: str):
    if name in ("LocalNamespace", "connect_veth"):
        from . import local
        return getattr(local, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
