"""The report model: everything a report shows, computed from a stored run.

Cases are grouped per scenario × MTU × traffic × side (transmitter, receiver, both);
each group lists its profiles in plan order with summaries of throughput, CPU and
loss, per-role CPU class tables, and the change against the group's "all on"
profile (the baseline, borrowed from a profile of side "both" when the side has
none of its own). Pure: no I/O, no printing.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Mapping, Sequence

from ..measure import capacity
from ..measure.headline import cpu_timed, headline_cpu_per_gbps, headline_roles  # cpu_timed: report modules import it here
from ..hosts.offloads import BASELINE
from ..records import CPU_CLASSES, CaseSpec, FeatureState, OffloadProfile, Sample, TrafficSpec
from ..analysis.stats import RelativeChange, Summary, relative_change, summary
from ..store.store import RunResults

SIDES = ("tx", "rx", "both")
ALL_CORES = "all cores"
SIDE_NAMES = {"tx": "transmitter", "rx": "receiver", "both": "both sides"}


@dataclass(frozen=True)
class Thresholds:
    """When a case is noisy, lossy or CPU-bound. Passed explicitly, never global."""

    noise_cv: float = 0.05
    """Coefficient of variation over which a case is flagged noisy."""
    loss_percent: float = 1.0
    saturated_percent: float = 95.0
    """A role's core busier than this is the bottleneck."""


@dataclass(frozen=True)
class RoleCpu:
    """One role's core: per-class percent over the runs."""

    role: str
    core: int
    classes: Mapping[str, Summary]
    """CPU class (see records.CPU_CLASSES) → summary of its percent of the window."""

    @property
    def busy(self) -> float:
        """Steal is the hypervisor's, never this core's work."""
        return (100.0 - self.classes["idle"].mean - self.classes["iowait"].mean
                - self.classes["steal"].mean)


@dataclass(frozen=True)
class ProfileRow:
    """One profile of a group, summarised over its repetitions."""

    case: CaseSpec
    samples: tuple[Sample, ...]
    throughput: Summary
    """Receiver goodput, Gbit/s."""
    sender: Summary
    """Sender rate, Gbit/s."""
    cpu_total: Summary | None
    """Busy CPU summed over cores, percent of one core, over the samples whose CPU window
    matched the measured window (None when none did)."""
    cpu_per_gbps: Summary | None
    """The headline: busy CPU per Gbit/s of the cores in `cpu_basis`."""
    loss_percent: Summary | None
    retransmits: Summary | None
    roles: tuple[RoleCpu, ...]
    offload_state: Mapping[str, Mapping[str, FeatureState]]
    """Interface label → ethtool feature → state in force (the last repetition's read-back)."""
    datapath_state: Mapping[str, Mapping[str, FeatureState]] = dataclasses.field(default_factory=dict)
    """The userspace datapath in force ("fwd" → mode, port → offloads), as recorded."""
    vs_baseline_throughput: RelativeChange | None = None
    """The effect of having the offloads on: all on relative to this profile."""
    vs_baseline_cpu: RelativeChange | None = None
    """CPU % per Gbps, all on relative to this profile."""
    cpu_roles: tuple[str, ...] | None = None
    """The roles whose cores the headline CPU counts where a wire's work shares the
    others (headline.WIRE_FREE_ROLES); None: every core."""

    @property
    def cpu_basis(self) -> str:
        """Whose cores the headline CPU counts: "all cores", or "sender's core"."""
        return ALL_CORES if self.cpu_roles is None else f"{_whose(self.cpu_roles)} core"

    @property
    def profile(self) -> OffloadProfile:
        return self.case.profile

    @property
    def off_features(self) -> frozenset[str]:
        """ethtool features the profile asked to turn off (the datapath is apart)."""
        return frozenset(name for name, on in self.profile.features.items() if not on)

    @property
    def recorded_state(self) -> dict[str, Mapping[str, FeatureState]]:
        """Everything recorded as in force: ethtool features, then the datapath."""
        return {**self.offload_state, **self.datapath_state}

    @property
    def n(self) -> int:
        return self.throughput.n


@dataclass(frozen=True)
class CaseGroup:
    """Profiles of one side compared under one scenario, MTU and workload."""

    scenario: str
    """The scenario variant's label ("middlebox-fwd-ab", "bare-dut-rcv", "bare")."""
    mtu: int
    traffic: TrafficSpec
    side: str
    baseline: ProfileRow | None
    rows: tuple[ProfileRow, ...]
    """Plan order; the baseline first when it was borrowed from another side."""

    @property
    def title(self) -> str:
        return f"{self.scenario} · MTU {self.mtu} · {self.traffic.label} · {SIDE_NAMES[self.side]}"

    @property
    def context(self) -> str:
        return f"{self.scenario}, MTU {self.mtu}, {self.traffic.label}"

    @property
    def slug(self) -> str:
        return f"{self.scenario}-mtu{self.mtu}-{self.traffic.label}-{self.side}"

    @property
    def cpu_basis(self) -> str:
        """Whose cores the group's headline CPU counts (its rows share a topology)."""
        return self.rows[0].cpu_basis if self.rows else ALL_CORES

    @property
    def cpu_metric(self) -> str:
        """The headline CPU's name in a sentence: "CPU per Gbps", or "sender's CPU per
        Gbps" where a wire's work shares the other cores (headline.WIRE_FREE_ROLES)."""
        roles = self.rows[0].cpu_roles if self.rows else None
        return "CPU per Gbps" if roles is None else f"{_whose(roles)} CPU per Gbps"

    @property
    def rate_unit(self) -> tuple[str, float]:
        """Unit in which to show this group's rates: Gbit/s, or Mbit/s when all are < 1."""
        if max(r.throughput.mean for r in self.rows) < 1.0:
            return "Mbit/s", 1000.0
        return "Gbit/s", 1.0

    @property
    def widest(self) -> ProfileRow | None:
        """The profile with the most features off (the seed's "offloads on vs off")."""
        others = [r for r in self.rows if r is not self.baseline and r.off_features]
        return max(others, key=lambda r: len(r.off_features), default=None)


def is_all_on(case: CaseSpec) -> bool:
    """Every ethtool feature on and no forwarder in the path: the group's baseline (a
    direct veth pair, the userspace study's reference, counts as one)."""
    forwarder = case.datapath is not None and case.datapath.forwarder
    # "On" is each feature's baseline state: UDP GRO forwarding's is off (offloads.BASELINE),
    # so a profile that turns it on is a change, not another baseline.
    at_baseline = all(on == BASELINE.get(name, True) for name, on in case.profile.features.items())
    return at_baseline and not forwarder


def build_rows(results: RunResults) -> dict[str, ProfileRow]:
    """case key → row, for every case with at least one sample."""
    return {
        case.key: profile_row(case, results.samples[case.key])
        for case in results.cases
        if results.samples.get(case.key)
    }


def profile_row(case: CaseSpec, samples: Sequence[Sample]) -> ProfileRow:
    samples = tuple(samples)
    timed = tuple(s for s in samples if cpu_timed(s))
    roles = headline_roles(case)
    per_gbps = [headline_cpu_per_gbps(s, roles) for s in timed]
    losses = [s.loss_percent for s in samples]
    retrans = [s.retransmits for s in samples]
    # A UDP capacity is the mean of the runs whose verification trial passed (the others'
    # rate is a trial that lost too much); with none verified the row shows them all,
    # and capacity_limits.verdict keeps it from advice.
    counted = (capacity.verified(samples) or samples) if case.traffic.mode == "capacity" else samples
    return ProfileRow(
        case=case,
        samples=samples,
        throughput=summary([s.throughput_bps / 1e9 for s in counted]),
        sender=summary([s.sender_bps / 1e9 for s in samples]),
        cpu_total=summary([s.cpu_total_percent for s in timed]) if timed else None,
        cpu_per_gbps=_summary_if_all(per_gbps) if timed else None,
        loss_percent=_summary_if_all(losses),
        retransmits=_summary_if_all(retrans),
        roles=role_cpu(timed) if timed else (),
        offload_state=samples[-1].offloads,
        datapath_state=samples[-1].datapath,
        cpu_roles=roles,
    )


def _whose(roles: Sequence[str]) -> str:
    """("sender",) → "sender's"."""
    return " and ".join(f"{role}'s" for role in roles)


def _summary_if_all(values: Sequence[float | None]) -> Summary | None:
    present = [v for v in values if v is not None]
    return summary(present) if present and len(present) == len(values) else None


def role_cpu(samples: Sequence[Sample]) -> tuple[RoleCpu, ...]:
    """Per-role CPU class summaries, roles ordered by host and core; cores no role was
    pinned to appear as "core N" (with its host on separate machines) so the table
    always accounts for every core measured."""
    first = samples[0]
    labels: dict[tuple[str, int], list[str]] = {(c.host, c.core): [] for c in
                                                sorted(first.cpu, key=lambda c: (c.host, c.core))}
    for role, core in sorted(first.roles.items(), key=lambda item: (item[1], item[0])):
        labels.setdefault((first.role_hosts.get(role, ""), core), []).append(role)
    out = []
    for (host, core), roles in labels.items():
        shares = [next((c for c in s.cpu if c.core == core and c.host == host), None) for s in samples]
        if any(share is None for share in shares):
            continue
        classes = {
            cls: summary([share.percent.get(cls, 0.0) for share in shares if share])
            for cls in CPU_CLASSES
        }
        idle = f"{host} core {core}" if host else f"core {core}"
        for role in roles or [idle]:
            out.append(RoleCpu(f"{role} ({host})" if host and roles else role, core, classes))
    return tuple(out)


def build_groups(results: RunResults, rows: Mapping[str, ProfileRow]) -> tuple[CaseGroup, ...]:
    """Groups in plan order of their first case."""
    groups: list[CaseGroup] = []
    for side, baseline, members in case_groups([c for c in results.cases if c.key in rows]):
        base_row = rows[baseline.key] if baseline is not None else None
        own = tuple(_with_deltas(rows[c.key], base_row) for c in members)
        first = own[0].case
        groups.append(CaseGroup(first.scenario_label, first.mtu, first.traffic, side, base_row, own))
    return tuple(groups)


def case_groups(cases: Sequence[CaseSpec]) -> list[tuple[str, CaseSpec | None, list[CaseSpec]]]:
    """(side, baseline, members) of the measured cases, grouped per scenario × MTU ×
    traffic and split by side, in plan order of their first case: what build_groups
    makes rows of, and what a history takes each case's baseline from."""
    buckets: dict[tuple[str, int, str], list[CaseSpec]] = {}
    for case in cases:
        buckets.setdefault((case.scenario_label, case.mtu, case.traffic.label), []).append(case)
    return [group for members in buckets.values() for group in _split_by_side(members)]


def _split_by_side(members: list[CaseSpec]) -> list[tuple[str, CaseSpec | None, list[CaseSpec]]]:
    shared = next((c for c in members if is_all_on(c)), None)
    varying = [c for c in members if not is_all_on(c)]
    sides = [s for s in SIDES if any(c.profile.side == s for c in varying)]
    if not sides:  # only baselines were measured: show them as they are
        sides = list(dict.fromkeys(c.profile.side for c in members))
    groups = []
    for side in sides:
        own = [c for c in members if c.profile.side == side]
        baseline = next((c for c in own if is_all_on(c)), shared)
        if baseline is not None and all(c is not baseline for c in own):
            own.insert(0, baseline)  # borrowed from side "both"
        groups.append((side, baseline, own))
    return groups


def _with_deltas(row: ProfileRow, baseline: ProfileRow | None) -> ProfileRow:
    if baseline is None or row is baseline:
        return row
    """The effect of having the offloads on: the baseline relative to this row (the sign
    convention of the advice and the summary too)."""
    cpu = None
    if row.cpu_per_gbps is not None and baseline.cpu_per_gbps is not None:
        cpu = relative_change(baseline.cpu_per_gbps.values, row.cpu_per_gbps.values)
    return dataclasses.replace(
        row,
        vs_baseline_throughput=relative_change(baseline.throughput.values, row.throughput.values),
        vs_baseline_cpu=cpu,
    )
