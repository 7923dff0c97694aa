"""A sample's headline CPU: busy CPU per Gbit/s of the cores a report counts, when the
sample's CPU can be used at all. Reports summarise it per case (report/model.py); the
store writes it beside each sample (store.py) so that a history averages it in the
database instead of reading every sample's CPU rows.
"""

from __future__ import annotations

from typing import Sequence

from .cpu import refusals, windows_off
from ..records import CaseSpec, Sample

WIRE_FREE_ROLES = {"nic": ("sender",)}
"""Topology `wire` → the roles whose cores carry none of the wire's own work: the headline
CPU per Gbit/s counts only those cores. The NIC wire (topology/bare.py) bridges and
segments on the receiver's core, work a NIC does in hardware; on 2 cores it cannot go
anywhere that is not measured, so a transmitter effect is read on the sender's core,
where its variable (the sender's TSO) acts, and the receiver's core (the receiver's work
and the wire's) is shown apart in the CPU table. Other wires: every core."""


def cpu_timed(sample: Sample) -> bool:
    """Whether the sample's CPU can be used: its CPU windows all match its measured
    window (a window off by more than 5 % on any host leaves it out of CPU figures), and
    no role's pinned tasks used more CPU than the role's core had (cpu.refusals: a clock
    or a pinning that cannot be trusted refuses the sample's CPU)."""
    return not windows_off(sample.counters, sample.duration_s) and not refusals(sample.counters)


def headline_cpu_per_gbps(sample: Sample, roles: Sequence[str] | None) -> float | None:
    """Busy CPU per Gbit/s of every core (roles None) or of these roles' cores only;
    None where a role's core was not measured or nothing was carried."""
    if roles is None:
        return sample.cpu_percent_per_gbps
    shares = [sample.role_share(role) for role in roles]
    gbps = sample.throughput_bps / 1e9
    if any(share is None for share in shares) or gbps <= 0:
        return None
    return sum(share.busy for share in shares) / gbps


def headline_roles(case: CaseSpec) -> tuple[str, ...] | None:
    """The roles whose cores a case's headline counts (None: every core)."""
    return WIRE_FREE_ROLES.get(case.topology.get("wire"))


def sample_headline(case: CaseSpec, sample: Sample) -> tuple[bool, float | None]:
    """(whether the sample's CPU can be used, its headline CPU per Gbit/s if so)."""
    timed = cpu_timed(sample)
    return timed, headline_cpu_per_gbps(sample, headline_roles(case)) if timed else None
