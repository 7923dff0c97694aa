"""The lab's records: what a plan asks for and what a measurement produced.

Every record is a frozen dataclass; raw values are kept next to what is derived from
them so a report can always be rebuilt from the store. These types are the contract
between the runner (which produces them), the store (which persists them) and the
stats/report modules (which read them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Mapping

RESULTS_FORMAT_VERSION = 1

CPU_CLASSES = ("usr", "nice", "sys", "iowait", "irq", "soft", "steal", "idle")
"""Columns of /proc/stat we keep, in the order they appear there (guest time is
already counted inside usr/nice by the kernel, so it is not added again)."""

Protocol = Literal["tcp", "udp"]
Side = Literal["tx", "rx", "both"]
"""Which host's offloads a profile changes: transmitter, receiver, or both."""


@dataclass(frozen=True)
class TrafficSpec:
    """One iperf3 workload."""

    protocol: Protocol
    duration_s: float
    warmup_s: float = 1.0
    udp_payload: int | None = None
    """UDP datagram payload in bytes (1472 → 1500 B frames, 18 → 60 B frames)."""
    message_size: int | None = None
    """TCP write size (iperf3 -l); None keeps iperf3's default."""
    bidirectional: bool = False
    streams: int = 1

    @property
    def label(self) -> str:
        if self.protocol == "udp":
            name = f"udp{self.udp_payload}"
        elif self.message_size:
            name = f"tcp-m{self.message_size}"
        else:
            name = "tcp"
        return name + ("-bidir" if self.bidirectional else "")


@dataclass(frozen=True)
class OffloadProfile:
    """A named set of ethtool features to force on one side; features not named are
    left as the driver defaults ("all on" is the empty profile on top of all-on)."""

    name: str
    side: Side
    features: Mapping[str, bool] = field(default_factory=dict)
    """ethtool -K feature name (as `ethtool -k` prints it) → wanted state."""


@dataclass(frozen=True)
class CaseSpec:
    """One cell of a plan: scenario × MTU × offload profile × traffic."""

    scenario: str
    mtu: int
    profile: OffloadProfile
    traffic: TrafficSpec

    @property
    def key(self) -> str:
        """Stable identifier, also used to match cases across two result sets."""
        return f"{self.scenario}/mtu{self.mtu}/{self.profile.side}:{self.profile.name}/{self.traffic.label}"


@dataclass(frozen=True)
class FeatureState:
    """A feature as `ethtool -k` reports it after we set it."""

    on: bool
    fixed: bool = False
    requested: bool | None = None
    """What the profile asked for; None when the profile left it alone."""

    @property
    def as_requested(self) -> bool:
        return self.requested is None or self.requested == self.on


@dataclass(frozen=True)
class CpuShare:
    """Per-class share of one core over the measured window, in percent (sums to ~100)."""

    core: int
    percent: Mapping[str, float]
    """class (one of CPU_CLASSES) → percent of the window."""

    @property
    def busy(self) -> float:
        return 100.0 - self.percent.get("idle", 0.0) - self.percent.get("iowait", 0.0)


@dataclass(frozen=True)
class Sample:
    """One repetition of one case, as measured."""

    case_key: str
    repetition: int
    started_at: float
    """Unix time at which the measured window began (after warm-up)."""
    duration_s: float
    """Length of the measured window (warm-up excluded)."""
    throughput_bps: float
    """Goodput seen by the receiver over the measured window, bits per second."""
    sender_bps: float
    """Rate the sender generated over the same window (differs from throughput for UDP)."""
    retransmits: int | None = None
    lost_packets: int | None = None
    total_packets: int | None = None
    cpu: tuple[CpuShare, ...] = ()
    """Every core of the machine over the measured window."""
    roles: Mapping[str, int] = field(default_factory=dict)
    """role ("sender", "receiver", "forwarder", …) → core it was pinned to."""
    offloads: Mapping[str, Mapping[str, FeatureState]] = field(default_factory=dict)
    """interface label ("tx:ofl-v0", "rx:ofl-v1", …) → feature → state in force."""
    counters: Mapping[str, float] = field(default_factory=dict)
    """Extra per-sample deltas (drops, checksum errors, fwd counters …) by name."""

    @property
    def loss_percent(self) -> float | None:
        if self.lost_packets is None or not self.total_packets:
            return None
        return 100.0 * self.lost_packets / self.total_packets

    @property
    def cpu_total_percent(self) -> float:
        """Busy CPU over all cores, 0 … 100 × cores."""
        return sum(c.busy for c in self.cpu)

    @property
    def cpu_percent_per_gbps(self) -> float | None:
        gbps = self.throughput_bps / 1e9
        return self.cpu_total_percent / gbps if gbps > 0 else None

    def role_share(self, role: str) -> CpuShare | None:
        core = self.roles.get(role)
        return next((c for c in self.cpu if c.core == core), None)


@dataclass(frozen=True)
class RunInfo:
    """One invocation of `offlab run`, with the environment it ran in."""

    run_id: str
    plan: str
    started_at: float
    command_line: str
    kernel: str
    cpu_model: str
    cores: int
    tool_versions: Mapping[str, str] = field(default_factory=dict)
    """iperf3, ethtool, ip, offlab … → version string."""
    host: str = ""
    notes: str = ""
