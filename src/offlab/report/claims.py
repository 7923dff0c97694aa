"""The seeds' claims answered one by one: each claim a plan can speak to, kept as data
(scenario, side, traffic, MTU, metric, the figure or the features it names), with the
measured counterpart, its 95 % CI and a verdict — reproduced, direction only, not
reproduced, or not comparable here (and why).

Seed 000 ("Hardware Offloads – Test results") states per scenario what enabling the
offloads of a side gives: throughput at MTU 1500 and "CPU performance" at MTU 9000, for
TCP and UDP. Its VM section words the CPU figure as "turning offloads off triggering
total CPU consumption rising by 64.8 %", so a CPU claim is read here as CPU per Gbit/s
with the offloads off relative to on (how much more CPU the same traffic costs without
them); it is shown in the report's one sign, on relative to off. Each percentage is set
against this run's all on vs all off of the same side, judged with its p adjusted over
all the report's tests; the "highest boost" claims against the single-off profiles,
ranked by their 95 % CIs: a feature is ahead only when its CI lies clear of the others'
(overlap is a tie). No verdict is read from a difference the recommendations set apart,
for any reason, and every verdict names the medium it was measured on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..hosts.offloads import GRO, GSO, RX_CSUM, TSO, TX_CSUM, UDP_TNL
from ..analysis.stats import FAMILY_METHOD
from .family import Headline
from .findings import merge_nested
from .states import umbrella
from .model import CaseGroup
from .phrases import format_adjusted, format_change, format_p, format_signed
from .effects import Effect, Step
from .recommend import _step, set_apart, step_effects
from .states import display_list
from .cells import Table
from .validity import MTU_WIRE
from .section import Section

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
    """"throughput", "cpu" (the seed's figure is CPU per Gbit/s off relative to on) or
    "highest boost"."""
    percent: float | None = None
    features: tuple[str, ...] = ()
    """For "highest boost": the features the seed names as giving it."""

    @property
    def place(self) -> str:
        side = {"tx": "transmitter", "rx": "receiver"}[self.side]
        return f"{self.scenario} · {side} · {self.protocol.upper()} · MTU {self.mtu}"

    @property
    def target(self) -> float:
        """The seed's figure in the report's one sign, as a fraction: the metric with the
        offloads on relative to off (a CPU claim, off relative to on, inverted)."""
        figure = self.percent / 100.0  # type: ignore[operator]
        return figure if self.metric == "throughput" else 1.0 / (1.0 + figure) - 1.0

    @property
    def claimed(self) -> str:
        if self.metric == "highest boost":
            return f"highest boost: {display_list(self.features)}"
        if self.metric == "throughput":
            return f"throughput +{self.percent:g}%"
        return (f"CPU per Gbit/s {format_signed(self.target)} (the seed's +{self.percent:g}% "
                "is off relative to on)")


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
    medium: str = "–"
    """What carried the traffic the answer comes from (`medium`), named beside the verdict:
    a seed's NIC figure and a veth figure on one kernel are not the same measurement."""


def medium(model: "ReportModel", group: CaseGroup | None) -> str:
    """The path as the run recorded it: the devices of the group's scenario, the wire,
    the hosts and their kernel ("veth pair, MTU-frame wire; namespaces on one machine,
    kernel 6.12.1")."""
    info = model.info
    settings = info.settings
    local = settings is None or settings.hosts == "local"
    if not local:
        drivers = "; ".join(f"{role}: {facts.get('nic driver', 'n/a')}, kernel "
                            f"{facts.get('kernel', info.kernel)}"
                            for role, facts in info.host_facts.items())
        return f"hosts {settings.hosts}" + (f" ({drivers})" if drivers else f", kernel {info.kernel}")
    where = f"namespaces on one machine, kernel {info.kernel}"
    if group is None:
        return where
    case = group.rows[0].case
    device = _DEVICES.get(case.scenario, case.scenario)
    wire = "MTU-frame wire" if case.topology.get("wire") == MTU_WIRE else "super-packet wire"
    return f"{device}, {wire}; {where}"


_DEVICES = {"bare": "veth pair", "vxlan": "VXLAN over a veth pair"}


def _groups(model: "ReportModel", claim: Claim, paced: bool) -> list[CaseGroup]:
    """The claim's groups, the MTU-wire variant first for a receiver (there the
    receiver's offloads have MTU frames to work on)."""
    names = ([f"{claim.scenario}-mtu-wire"] if claim.side == "rx" else []) + [claim.scenario]
    found = [g for g in model.groups if g.scenario in names and g.mtu == claim.mtu and g.side == claim.side
             and g.traffic.protocol == claim.protocol and bool(g.traffic.service_demand) == paced
             and g.traffic.mode != "rr" and not g.traffic.bidirectional and not g.traffic.message_size]
    return sorted(found, key=lambda g: names.index(g.scenario))


def _verdict(claim: Claim, headline: Headline) -> str:
    change, target = headline.change, claim.target
    if not headline.holds:
        return ("not reproduced (no difference that holds across the report's tests: "
                f"{format_p(change.welch.p_value)}, "
                f"{format_adjusted(headline.adjusted_p, headline.tests, FAMILY_METHOD)})")
    if (change.ratio > 0) != (target > 0):
        return "not reproduced (the opposite direction)"
    low, high = change.ci95 or (change.ratio, change.ratio)
    if low <= target <= high:
        return "reproduced (the claim lies in the 95% CI)"
    nearest = high if target > 0 else low  # the CI's end farthest from zero
    return f"direction only ({'smaller' if abs(nearest) < abs(target) else 'larger'} than claimed)"


def _set_apart_in(model: "ReportModel", group: CaseGroup) -> str | None:
    """The label of a difference of the group the recommendations set apart: the group's
    all on vs all off contains it, so no verdict is read from the group."""
    return next((f"{display_list(step.credited or step.requested)} set apart: {why.label}"
                 for step, why in model.recommendations.excluded if step.group is group), None)


def _percentage(model: "ReportModel", claim: Claim) -> Answer:
    groups = _groups(model, claim, paced=True) if claim.metric == "cpu" else []
    paced = bool(groups)
    groups = groups or _groups(model, claim, paced=False)
    if not groups:
        return Answer(claim, "–", f"not comparable here ({_missing(model, claim)})", medium(model, None))
    group = groups[0]
    where = medium(model, group)
    if group.widest is None or group.baseline is None:
        return Answer(claim, "–", "not comparable here (no all-off profile beside all on)", where)
    headline = next((h for h in model.recommendations.headlines
                     if h.group is group and h.metric == claim.metric), None)
    measured = (f"{format_change(headline.change)} · {group.context} (all on vs {group.widest.profile.name})"
                if headline else "–")
    step = _step(group, group.baseline, group.widest)
    reason = set_apart(step, step_effects(step), model.virtual_devices, model.adaptive)
    label = reason.label if reason is not None else _set_apart_in(model, group)
    if label is not None:
        return Answer(claim, measured, f"not comparable here ({label})", where)
    if claim.metric == "cpu" and not paced and _saturated(group):
        return Answer(claim, measured, "not comparable here (CPU measured with a core saturated; "
                                       "the seed's CPU figures are at a rate the link set)", where)
    if headline is None:
        return Answer(claim, measured, "not comparable here (no CPU figure in its window)", where)
    return Answer(claim, measured, _verdict(claim, headline), where)


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


def _span(effect: Effect) -> tuple[float, float] | None:
    """The 95 % CIs of a finding's comparisons, as one span (None when one has none)."""
    ends = [e.keep_on.ci95 for e in (effect, *effect.nested)]
    if any(ci is None for ci in ends):
        return None
    return min(ci[0] for ci in ends), max(ci[1] for ci in ends)  # type: ignore[index]


def _apart(a: Effect, b: Effect) -> bool:
    """Whether two findings' CIs do not overlap (a finding without a CI overlaps all)."""
    sa, sb = _span(a), _span(b)
    return sa is not None and sb is not None and (sa[0] > sb[1] or sb[0] > sa[1])


def _top(effect: Effect) -> float:
    return max(e.keep_on.ratio for e in (effect, *effect.nested))


def _highest(model: "ReportModel", claim: Claim) -> Answer:
    groups = _groups(model, claim, paced=False)
    if not groups:
        return Answer(claim, "–", f"not comparable here ({_missing(model, claim)})", medium(model, None))
    group, rec = groups[0], model.recommendations
    where = medium(model, group)
    singles = [s for s in (*rec.steps, *(s for s, _ in rec.excluded))
               if s.group is group and not s.cumulative and s.credited]
    if not singles:
        return Answer(claim, "–", "not comparable here (no profile with a feature off alone here)", where)
    apart = _set_apart_in(model, group)
    effects = [e for s in singles for e in rec.effects_of(s) if e.metric == "throughput"]
    if not effects:
        return Answer(claim, "–", "not comparable here (no throughput figure)", where)
    ranked = sorted(merge_nested(effects), key=lambda f: -_top(f))
    measured = "; ".join(f"{display_list(f.features)} "
                         + ", ".join(format_change(e.keep_on) for e in (f, *f.nested)) for f in ranked)
    if apart is not None:
        return Answer(claim, measured, f"not comparable here ({apart})", where)
    return Answer(claim, measured, _ranking_verdict(claim, ranked, singles), where)


def _ranking_verdict(claim: Claim, ranked: list[Effect], singles: list[Step]) -> str:
    """Reproduced only when the claimed feature's finding is ahead of every other with
    CIs apart; overlapping CIs are a tie, said as such."""
    alone = {umbrella(f) for step in singles for f in step.credited}
    unmeasured = [f for f in claim.features if f not in alone]
    note = f"; {display_list(unmeasured)} never turned off alone here, not judged" if unmeasured else ""
    if len(unmeasured) == len(claim.features):
        return f"not comparable here ({display_list(unmeasured)} never turned off alone here)"
    top = ranked[0]
    if len(ranked) == 1:
        joint = " as one finding (nested profiles)" if top.nested else ""
        return (f"not comparable here (the profiles with one feature off measure "
                f"{display_list(top.features)}{joint}: nothing to rank it against)") + note
    if not top.holds or top.keep_on.ratio <= 0:
        return "not reproduced (no feature alone helped, across the report's tests)" + note
    leaders = [top] + [f for f in ranked[1:] if not _apart(top, f)]
    claimed = [f for f in leaders if set(f.features) & set(claim.features)]
    names = " and ".join(display_list(f.features) for f in leaders)
    if len(leaders) > 1:
        lead = "the claim's among them, none ahead" if claimed else "the claim's not among them"
        return f"tie: {names} (95% CIs overlap; {lead})" + note
    if not claimed:
        return f"not reproduced ({names} helped most, CIs apart)" + note
    joint = (f", as one finding with {display_list(f for f in top.features if f not in claim.features)} "
             "(nested profiles)") if top.nested else ""
    return f"reproduced ({names} ahead of the others, CIs apart{joint})" + note


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
         "this run measured, in the report's one sign (the effect of having the offloads on): "
         "a percentage against all on vs all off of the same side (throughput; for CPU, CPU "
         "per Gbit/s with the offloads on relative to off, from the paced runs where the plan "
         "has them — the seed's “CPU performance gain” of X% read as CPU per Gbit/s off "
         "relative to on, so 1/(1 + X) − 1 on relative to off), with its 95% CI in brackets; "
         "a “highest boost” against the profiles with one feature off, ranked by their CIs. "
         "Reproduced: the claimed figure lies in the CI, or the claimed feature is ahead of "
         "every other with CIs apart; direction only: holds, same sign, outside the CI; tie: "
         "the leading CIs overlap; not reproduced: no difference that holds across the "
         "report's tests (Holm), or the opposite sign; not comparable here: why not — among "
         "them any difference the recommendations set apart, for whatever reason. The medium "
         "is what carried the traffic, as the run recorded it: a figure from veth on one "
         "kernel answers a NIC claim only as far as that medium can.")


def claims_sections(model: "ReportModel") -> list:
    found = answers(model)
    if not found:
        return []
    rows = tuple((f"seed {a.claim.seed} {a.claim.where}", a.claim.place, a.claim.claimed, a.measured,
                  a.medium, a.verdict) for a in found)
    table = Table(("Claim", "Where", "Claimed (on vs off)", "Measured here [95% CI]", "Medium", "Verdict"),
                  rows, align_left=6)
    return [Section("The seeds' claims, answered", INTRO, (("Seed 000", table),))]
