"""The seeds' claims answered one by one: each claim a plan can speak to, kept as data
(scenario, side, traffic, MTU, metric, the figure or the features it names), with the
measured counterpart, its 95 % CI and a verdict — reproduced, direction only, not
reproduced, or not comparable here (and why).

Seed 000 ("Hardware Offloads – Test results") states per scenario what enabling the
offloads of a side gives: throughput at MTU 1500 and "CPU performance" at MTU 9000, for
TCP and UDP. Its VM section words the CPU figure as "turning offloads off triggering
total CPU consumption rising by 64.8 %", so a CPU claim is read here as CPU per Gbit/s
with the offloads off relative to on (how much more CPU the same traffic costs without
them). Each percentage is set against this run's all on vs all off of the same side;
the "highest boost" claims against the single-off profile whose effect was largest.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..offloads import GRO, GSO, RX_CSUM, TSO, TX_CSUM, UDP_TNL
from ..stats import RelativeChange, relative_change
from .model import CaseGroup
from .phrases import format_change
from .recommend import _step, step_effects
from .states import display_list
from .tables import Table
from .validity import exclusion

if TYPE_CHECKING:
    from .document import ReportModel

SATURATED_BUSY = 95.0
"""A role busier than this: CPU per Gbit/s there is a saturated figure."""


@dataclass(frozen=True)
class Claim:
    seed: str
    where: str
    """The seed's words, short enough to recognise the sentence."""
    scenario: str
    side: str
    protocol: str
    mtu: int
    metric: str
    """"throughput", "cpu" (CPU per Gbit/s off relative to on) or "highest boost"."""
    percent: float | None = None
    features: tuple[str, ...] = ()
    """For "highest boost": the features the seed names as giving it."""

    @property
    def place(self) -> str:
        side = {"tx": "transmitter", "rx": "receiver"}[self.side]
        return f"{self.scenario} · {side} · {self.protocol.upper()} · MTU {self.mtu}"

    @property
    def claimed(self) -> str:
        if self.metric == "highest boost":
            return f"highest boost: {display_list(self.features)}"
        what = "throughput" if self.metric == "throughput" else "CPU per Gbit/s off vs on"
        return f"{what} +{self.percent:g}%"


def _pct(seed_sentence: str, scenario: str, side: str, mtu: int, metric: str, tcp: float,
         udp: float) -> tuple[Claim, Claim]:
    return (Claim("000", seed_sentence, scenario, side, "tcp", mtu, metric, tcp),
            Claim("000", seed_sentence, scenario, side, "udp", mtu, metric, udp))


_BARE, _VXLAN = "§6.10.1.1 Baseline physical", "§6.10.1.2 Baseline physical over VxLAN"
CLAIMS: tuple[Claim, ...] = (
    *_pct(f"{_BARE}: “on a transmitter with MTU 1500 gives 60% throughput gain for TCP and 5% for UDP”",
          "bare", "tx", 1500, "throughput", 60, 5),
    *_pct(f"{_BARE}: “on a receiver with MTU 1500 gives 40% throughput gain for TCP and 11.7% for UDP”",
          "bare", "rx", 1500, "throughput", 40, 11.7),
    *_pct(f"{_BARE}: “on a transmitter with MTU 9000 gives 55% CPU performance gain for TCP and 11.6% for UDP”",
          "bare", "tx", 9000, "cpu", 55, 11.6),
    *_pct(f"{_BARE}: “on a receiver with MTU 9000 gives 44% CPU performance gain for TCP and 27.3% for UDP”",
          "bare", "rx", 9000, "cpu", 44, 27.3),
    *_pct(f"{_VXLAN}: “on a transmitter with MTU 1500 gives 23.3% throughput gain for TCP and 7.4% for UDP”",
          "vxlan", "tx", 1500, "throughput", 23.3, 7.4),
    *_pct(f"{_VXLAN}: “on a receiver with MTU 1500 gives 66% throughput gain for TCP and 2.4% for UDP”",
          "vxlan", "rx", 1500, "throughput", 66, 2.4),
    *_pct(f"{_VXLAN}: “on a transmitter with MTU 9000 gives 25% CPU performance gain for TCP and 17.4% for UDP”",
          "vxlan", "tx", 9000, "cpu", 25, 17.4),
    *_pct(f"{_VXLAN}: “on a receiver with MTU 9000 gives 48% CPU performance gain for TCP and 29% for UDP”",
          "vxlan", "rx", 9000, "cpu", 48, 29),
    Claim("000", f"{_BARE}: “with TSO and GSO giving the highest boost” (transmitter, MTU 1500)",
          "bare", "tx", "tcp", 1500, "highest boost", features=(TSO, GSO)),
    Claim("000", f"{_BARE}: “with GRO and Rx checksumming giving the highest boost respectively” (TCP)",
          "bare", "rx", "tcp", 1500, "highest boost", features=(GRO,)),
    Claim("000", f"{_BARE}: “with GRO and Rx checksumming giving the highest boost respectively” (UDP)",
          "bare", "rx", "udp", 1500, "highest boost", features=(RX_CSUM,)),
    Claim("000", f"{_VXLAN}: “with Tx checksumming and Tx UDP tunneling segmentation giving the highest boost”",
          "vxlan", "tx", "tcp", 1500, "highest boost", features=(TX_CSUM, UDP_TNL)),
    Claim("000", f"{_VXLAN}: “with GRO giving the highest boost” (receiver, MTU 1500)",
          "vxlan", "rx", "tcp", 1500, "highest boost", features=(GRO,)),
)
"""Seed 000's claims about the scenarios the offloads study builds (its VM-to-VM claims
need guests with the seed's sequences, which no plan here measures)."""


@dataclass(frozen=True)
class Answer:
    claim: Claim
    measured: str
    verdict: str


def _groups(model: "ReportModel", claim: Claim, paced: bool) -> list[CaseGroup]:
    """The claim's groups, the MTU-wire variant first for a receiver (there the
    receiver's offloads have MTU frames to work on)."""
    names = ([f"{claim.scenario}-mtu-wire"] if claim.side == "rx" else []) + [claim.scenario]
    found = [g for g in model.groups if g.scenario in names and g.mtu == claim.mtu and g.side == claim.side
             and g.traffic.protocol == claim.protocol and bool(g.traffic.service_demand) == paced
             and g.traffic.mode != "rr" and not g.traffic.bidirectional and not g.traffic.message_size]
    return sorted(found, key=lambda g: names.index(g.scenario))


def _change(group: CaseGroup, metric: str) -> RelativeChange | None:
    on, off = group.baseline, group.widest
    if on is None or off is None:
        return None
    if metric == "throughput":
        return relative_change(on.throughput.values, off.throughput.values)
    if on.cpu_per_gbps is None or off.cpu_per_gbps is None:
        return None
    return relative_change(off.cpu_per_gbps.values, on.cpu_per_gbps.values)


def _verdict(claim: Claim, change: RelativeChange) -> str:
    target = claim.percent / 100.0  # type: ignore[operator]
    if not change.significant:
        return "not reproduced (no significant difference)"
    if (change.ratio > 0) != (target > 0):
        return "not reproduced (the opposite direction)"
    low, high = change.ci95 or (change.ratio, change.ratio)
    if low <= target <= high:
        return "reproduced (the claim lies in the 95% CI)"
    return "direction only (" + ("smaller" if high < target else "larger") + " than claimed)"


def _percentage(model: "ReportModel", claim: Claim) -> Answer:
    groups = _groups(model, claim, paced=True) if claim.metric == "cpu" else []
    paced = bool(groups)
    groups = groups or _groups(model, claim, paced=False)
    if not groups:
        return Answer(claim, "–", f"not comparable here ({_missing(model, claim)})")
    group = groups[0]
    if group.widest is None or group.baseline is None:
        return Answer(claim, "–", "not comparable here (no all-off profile beside all on)")
    step = _step(group, group.baseline, group.widest)
    reason = exclusion(step, model.virtual_devices)
    change = _change(group, claim.metric)
    measured = f"{format_change(change)} · {group.context} ({group.widest.profile.name} vs all on)" if change else "–"
    if reason is not None:
        return Answer(claim, measured, f"not comparable here ({reason.label})")
    if claim.metric == "cpu" and not paced and _saturated(group):
        return Answer(claim, measured, "not comparable here (CPU measured with a core saturated; "
                                       "the seed's CPU figures are at a rate the link set)")
    if change is None:
        return Answer(claim, measured, "not comparable here (no CPU figure in its window)")
    return Answer(claim, measured, _verdict(claim, change))


def _saturated(group: CaseGroup) -> bool:
    return any(role.busy > SATURATED_BUSY for row in (group.baseline, group.widest) if row for role in row.roles)


def _missing(model: "ReportModel", claim: Claim) -> str:
    scenarios = {g.scenario.removesuffix("-mtu-wire") for g in model.groups}
    if claim.scenario not in scenarios:
        return f"no {claim.scenario} scenario in this plan"
    if claim.mtu not in {g.mtu for g in model.groups if g.scenario.startswith(claim.scenario)}:
        return f"MTU {claim.mtu} is not in this plan"
    if claim.protocol not in {g.traffic.protocol for g in model.groups}:
        return f"no {claim.protocol.upper()} traffic in this plan"
    side = {"tx": "transmitter", "rx": "receiver"}[claim.side]
    return f"this plan measures no {claim.protocol.upper()} case with the {side}'s offloads off"


def _highest(model: "ReportModel", claim: Claim) -> Answer:
    groups = _groups(model, claim, paced=False)
    if not groups:
        return Answer(claim, "–", f"not comparable here ({_missing(model, claim)})")
    rec = model.recommendations
    excluded = {id(step) for step, _ in rec.excluded}
    steps = [s for s in (*rec.steps, *(s for s, _ in rec.excluded))
             if s.group is groups[0] and not s.cumulative and s.credited]
    if not steps:
        return Answer(claim, "–", "not comparable here (no profile with a feature off alone here)")
    ranked = []
    for step in steps:
        effect = next((e for e in step_effects(step) if e.metric == "throughput"), None)
        if effect is not None:
            ranked.append((effect.keep_on.ratio, step, effect))
    if not ranked:
        return Answer(claim, "–", "not comparable here (no throughput figure)")
    ratio, top, effect = max(ranked, key=lambda item: item[0])
    measured = f"{display_list(top.credited)} {format_change(effect.keep_on)} ({top.off_row.profile.name} vs all on)"
    if id(top) in excluded:
        return Answer(claim, measured, "not comparable here (the largest effect is set apart from the advice)")
    if not effect.significant or ratio <= 0:
        return Answer(claim, measured, "not reproduced (no feature alone helped significantly)")
    if set(top.credited) & set(claim.features):
        return Answer(claim, measured, "reproduced")
    return Answer(claim, measured, "not reproduced (another feature helped most)")


def answers(model: "ReportModel") -> list[Answer]:
    """An answer per claim whose scenario the run measured, in the claims' order."""
    scenarios = {g.scenario.removesuffix("-mtu-wire") for g in model.groups}
    out = []
    for claim in CLAIMS:
        if claim.scenario not in scenarios:
            continue
        out.append(_highest(model, claim) if claim.metric == "highest boost" else _percentage(model, claim))
    return out


INTRO = ("Each claim of the seed documents this plan's scenarios speak to, quoted, with what "
         "this run measured: a percentage against all on vs all off of the same side (throughput; "
         "for CPU, CPU per Gbit/s with the offloads off relative to on, from the paced runs "
         "where the plan has them), with its 95% CI; a “highest boost” against the profile with "
         "one feature off whose effect was largest. Reproduced: the claimed figure lies in the "
         "CI; direction only: significant, same sign, outside the CI; not reproduced: no "
         "significant difference or the opposite sign; not comparable here: why not.")


def claims_sections(model: "ReportModel") -> list:
    from ..studies import Section
    found = answers(model)
    if not found:
        return []
    rows = tuple((f"seed {a.claim.seed} {a.claim.where}", a.claim.place, a.claim.claimed, a.measured, a.verdict)
                 for a in found)
    table = Table(("Claim", "Where", "Claimed", "Measured here (95% CI)", "Verdict"), rows, align_left=5)
    return [Section("The seeds' claims, answered", INTRO, (("Seed 000", table),))]
