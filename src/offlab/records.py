"""The lab's records: what a plan asks for and what a measurement produced.

Every record is a frozen dataclass; raw values are kept next to what is derived from
them so a report can always be rebuilt from the store. These types are the contract
between the runner (which produces them), the store (which persists them) and the
stats/report modules (which read them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Literal, Mapping, Union

RESULTS_FORMAT_VERSION = 2
"""1: case parameters encoded in scenario and profile names, run settings in notes.
2: typed case parameters, datapath settings apart from ethtool features, run settings
as a record (see store.py and migrations.py)."""

CPU_CLASSES = ("usr", "nice", "sys", "iowait", "irq", "soft", "steal", "idle")
"""Columns of /proc/stat we keep, in the order they appear there (guest time is
already counted inside usr/nice by the kernel, so it is not added again)."""

Protocol = Literal["tcp", "udp"]
Side = Literal["tx", "rx", "both"]
"""Which host's offloads a profile changes: transmitter, receiver, or both."""


# The latency workloads' fixed shapes (measure/latency.py runs them; hosts/guard.py
# counts what they offer a server's network).
PROBE_INTERVAL_MS = 2
"""One probe every 2 ms: 500 packets/s of 60 B, nothing next to a stream, and 1000 round
trips in two seconds — enough for a p99.9 (measure/rtthist.MIN_SAMPLES)."""
RR_MESSAGE = 64
"""Request and response size of the ping-pong workload, bytes."""

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
    mode: Literal["stream", "capacity", "rr"] = "stream"
    """stream: iperf3 at `rate`; capacity: the highest UDP rate with loss at or below
    `loss_percent` (ratesearch.py); rr: TCP request/response transactions (sockperf)."""
    rate_bps: float | None = None
    """UDP offered rate (iperf3 -b); None: as fast as the sender can."""
    loss_percent: float = 0.1
    """A UDP sample losing more than this is overloaded; the capacity search's bound."""
    latency_probe: bool = False
    """A TCP stream with an irtt probe beside it (RTT under load)."""
    generator: Literal["iperf3", "udpload"] = "iperf3"
    """The UDP load tool: iperf3, or offlab-udpload (udpload.py), which has the socket
    options of today's UDP stacks that iperf3 3.12 lacks."""
    udp_gso: bool = False
    """With udpload: the sender hands the kernel up to 64 datagrams per send (UDP_SEGMENT)
    and the receiver takes coalesced runs of them (UDP_GRO), as QUIC stacks do."""

    service_demand: float | None = None
    """A TCP stream paced (iperf3 -b) at this fraction of the slowest saturated profile's
    throughput in its topology, so no profile is CPU-bound and CPU per Gbit/s is
    netperf's service demand; the rate itself is decided by the runner from the saturated
    samples and recorded per sample ("offered_bps"), not here."""

    @property
    def label(self) -> str:
        if self.mode == "rr":
            return f"{self.protocol}-rr"
        if self.protocol == "udp":
            name = f"udp{self.udp_payload}"
            if self.generator == "udpload":
                name += "-gso" if self.udp_gso else "-plain"
            if self.mode == "capacity":
                name += "-capacity"
            elif self.rate_bps:
                name += f"-{rate_text(self.rate_bps)}"
        elif self.message_size:
            name = f"tcp-m{self.message_size}"
        else:
            name = "tcp"
        if self.protocol == "tcp" and self.service_demand:
            name += f"-sd{100 * self.service_demand:g}"
        if self.streams > 1:
            name += f"-p{self.streams}"
        return name + ("-bidir" if self.bidirectional else "")


def rate_text(bps: float) -> str:
    """1e9 → "1G", 2.5e8 → "250M" (iperf3's own suffixes)."""
    for unit, scale in (("G", 1e9), ("M", 1e6), ("K", 1e3)):
        if bps >= scale:
            return f"{bps / scale:g}{unit}"
    return f"{bps:g}"


@dataclass(frozen=True)
class OffloadProfile:
    """A named set of ethtool features to force on one side; features not named are
    left as the driver defaults ("all on" is the empty profile on top of all-on)."""

    name: str
    side: Side
    features: Mapping[str, bool] = field(default_factory=dict)
    """ethtool -K feature name (as `ethtool -k` prints it) → wanted state."""


ParamValue = Union[str, int, bool]


class Params(Mapping[str, ParamValue]):
    """Typed parameters of a case (a study's own axes: path, router, DUT direction,
    combination …): an immutable, hashable mapping, stored as a JSON object. A name
    is a field here, never a part of some other string."""

    __slots__ = ("_items",)

    def __init__(self, values: Mapping[str, ParamValue] | None = None, **more: ParamValue):
        merged = {**(values or {}), **more}
        for name, value in merged.items():
            if not isinstance(value, (str, int, bool)):
                raise TypeError(f"case parameter {name!r}: {value!r} is not a str, int or bool")
        self._items: tuple[tuple[str, ParamValue], ...] = tuple(sorted(merged.items()))

    def __getitem__(self, name: str) -> ParamValue:
        for key, value in self._items:
            if key == name:
                return value
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return (key for key, _ in self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return hash(self._items)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Params):
            return self._items == other._items
        return isinstance(other, Mapping) and dict(self._items) == dict(other)

    def __repr__(self) -> str:
        return f"Params({dict(self._items)!r})"

    def with_(self, **more: ParamValue) -> "Params":
        return Params(dict(self._items), **more)


@dataclass(frozen=True)
class PortSetting:
    """What one forwarder port negotiates: virtio-style offloads in offlab-fwd's
    spelling (csum, tso4, tso6, ecn, uso, udptnl, udptnl-csum) and, for a TAP, IFF_NAPI."""

    offloads: frozenset[str] = frozenset()
    napi: bool = False


@dataclass(frozen=True)
class DatapathSetting:
    """The userspace datapath of a case, apart from its ethtool features.

    `forwarder` False is the reference path: a direct veth pair replaces offlab-fwd
    between the same hosts (mode and ports are then unused)."""

    forwarder: bool = True
    mode: str = "pass"
    """offlab-fwd's mode: pass, csum, gso or gro."""
    ports: tuple[tuple[str, PortSetting], ...] = ()
    """Port role ("a", "b") → its setting, in port order."""

    def port(self, role: str) -> PortSetting:
        return dict(self.ports).get(role, PortSetting())

    @property
    def label(self) -> str:
        """For people: "direct veth" or "gro; a: csum; b: csum+tso4+napi"."""
        if not self.forwarder:
            return "direct veth"
        parts = [self.mode]
        for role, port in self.ports:
            listed = "+".join(sorted(port.offloads)) or "none"
            parts.append(f"{role}: {listed}{'+napi' if port.napi else ''}")
        return "; ".join(parts)


GUEST_ENTRY = "qemu"
"""Datapath-state entry of a topology with QEMU guests: "accel.tcg"/"accel.kvm" (which
accelerator the guests ran on) and "backend.<name>" (which backend carried them)."""
TCG = "accel.tcg"


@dataclass(frozen=True)
class CaseSpec:
    """One cell of a plan: scenario × MTU × offload profile × traffic, with the study's
    own parameters as data.

    `topology` holds what the scenario's builder takes (middlebox: path, router; a DUT
    layout: dut); the runner builds one topology per (scenario, MTU, topology). `params`
    holds the study's other parameters (middlebox: checksum/tso/gro of the combination),
    which the report reads. `datapath` is the userspace datapath's setting (None: the
    kernel's own path). `label` names the scenario variant for people and for matching
    cases across runs ("middlebox-fwd-ab"); it is derived by the study and never parsed.
    """

    scenario: str
    mtu: int
    profile: OffloadProfile
    traffic: TrafficSpec
    topology: Params = field(default_factory=Params)
    params: Params = field(default_factory=Params)
    datapath: DatapathSetting | None = None
    label: str = ""

    @property
    def scenario_label(self) -> str:
        return self.label or self.scenario

    @property
    def key(self) -> str:
        """Stable identifier, also used to match cases across two result sets."""
        return (f"{self.scenario_label}/mtu{self.mtu}/{self.profile.side}:{self.profile.name}"
                f"/{self.traffic.label}")


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
    host: str = ""
    """The host whose core it is when the run's hosts are separate machines ("tx",
    "rx"); empty when every host shares this machine's cores."""

    @property
    def busy(self) -> float:
        """Time the core worked for this machine: steal (the hypervisor ran someone
        else) is shown apart and never counted as busy."""
        return max(0.0, 100.0 - self.percent.get("idle", 0.0) - self.percent.get("iowait", 0.0)
                   - self.percent.get("steal", 0.0))


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
    role_hosts: Mapping[str, str] = field(default_factory=dict)
    """role → the host whose core that is (separate machines only; see CpuShare.host)."""
    offloads: Mapping[str, Mapping[str, FeatureState]] = field(default_factory=dict)
    """interface label ("tx:ofl-v0", "rx:ofl-v1", …) → ethtool feature → state in force."""
    datapath: Mapping[str, Mapping[str, FeatureState]] = field(default_factory=dict)
    """The userspace datapath in force, as offlab-fwd reported it: "fwd" → "mode.<m>",
    and each port ("tap:ofl-ta") → negotiated offload; empty on the kernel's path."""
    counters: Mapping[str, float] = field(default_factory=dict)
    """Extra per-sample deltas (drops, checksum errors, fwd counters …) by name."""
    intervals: tuple["Interval", ...] = ()
    """The receiver's rate over time, warm-up included (iperf3's report intervals)."""
    probes: tuple["RateProbe", ...] = ()
    """Capacity mode: every trial of the rate search, in the order run."""

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
        core, host = self.roles.get(role), self.role_hosts.get(role, "")
        return next((c for c in self.cpu if c.core == core and c.host == host), None)


@dataclass(frozen=True)
class Interval:
    """One report interval of a test: seconds from its start, and the received rate."""

    start_s: float
    end_s: float
    bps: float
    warmup: bool = False


@dataclass(frozen=True)
class RateProbe:
    """One trial of a capacity search (see ratesearch.Probe)."""

    offered_bps: float
    sent_bps: float
    received_bps: float
    loss_percent: float


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
    """Free text for people; nothing reads settings from it (see `settings`)."""
    settings: "RunSettings | None" = None
    host_facts: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    """Real hosts: host → what it is (kernel, NIC driver and firmware, bus, link speed,
    queues, rings, coalescing, cores), as read when the run began."""


@dataclass(frozen=True)
class RunSettings:
    """How a run repeats and lays out its cases; stored with the run, read by resume
    and by the report."""

    repetitions: int
    """Fixed repetitions per case (the ceiling when `ci_target` is set)."""
    steer_rx_softirq: bool = True
    ci_target: float | None = None
    """Adaptive repetitions: the wanted 95 % CI half-width as a fraction of the mean."""
    min_runs: int | None = None
    max_runs: int | None = None
    hosts: str = "local"
    """Where the run's hosts were: "local" (network namespaces on this machine)."""
