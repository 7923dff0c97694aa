"""Where the lab's commands run. A `Host` runs commands, spawns and stops processes,
reads and writes files and configures links; topologies, offload control, traffic,
CPU sampling and counters all go through it and never spell `ip netns exec` or `ssh`.

Implementations: `LocalNamespace` (a network namespace on this machine, the default
lab); a host reached over SSH joins them on the same interface."""

from .base import Host, HostError
from .local import LocalNamespace, connect_veth

__all__ = ["Host", "HostError", "LocalNamespace", "connect_veth"]
