"""Socket buffers sized as a tuned UDP test sizes them.

With the kernel's default `SO_RCVBUF` (~208 KiB) a UDP receiver on a busy core loses
datagrams to its own socket buffer (`Udp.RcvbufErrors`) at a fraction of what the
path carries: a capacity measured that way is the buffer's and the scheduler's, not
the offloads'. A tuned test asks for a large buffer (iperf3 `-w`), which the kernel
grants only up to `net.core.rmem_max` / `wmem_max` — so the lab raises those limits
on the endpoints of a UDP topology for the run.

On a real host the change goes through `Host.sysctl`, which journals the old value and
restores it. In a local namespace, kernels that namespace the limits (6.x) inherit the
root namespace's value when the namespace is created and keep it read-only inside;
there the raise cannot happen, and what the kernel granted is recorded with every
sample (iperf3's `rcvbuf_actual`) so the report can say which buffer was in force.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from ..proc import ProcessError

if TYPE_CHECKING:
    from ..hosts import Host

UDP_SOCKET_BUFFER = 4 * 1024 * 1024
"""Bytes asked for with iperf3 `-w` on UDP tests: 4 MiB, ~2 ms at 10 Gbit/s, enough that
a receiver descheduled for a few milliseconds does not overflow it."""
LIMITS = ("net.core.rmem_max", "net.core.wmem_max")


def raise_limits(hosts: Iterable["Host"], size: int = UDP_SOCKET_BUFFER) -> list[str]:
    """Raise every host's rmem_max/wmem_max to at least `size` (one `sysctl` each, only
    where lower). Returns one note per limit that stayed below `size`, for the run's
    notes; an empty list when every host allows the buffer."""
    notes = []
    for host in hosts:
        for key in LIMITS:
            try:
                current = int(host.read_file("/proc/sys/" + key.replace(".", "/")).strip())
            except (FileNotFoundError, ValueError):
                continue  # not visible here: the machine's value applies, recorded per sample
            if current >= size:
                continue
            try:
                host.sysctl(key, str(size))
            except ProcessError:
                notes.append(f"{host.name}: {key} is {current} and read-only here; UDP socket "
                             f"buffers are capped there (raise it before the run: sysctl -w {key}={size})")
    return notes
