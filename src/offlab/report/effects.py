"""One step between two profiles of a group (`Step`: some features turned off) and what
it did to one metric (`Effect`), with the sentence the advice prints for it. Kept below
the modules that judge effects (validity.py, precision.py, findings.py) and the one that
assembles the advice (recommend.py), which all read these records."""

from __future__ import annotations

from dataclasses import dataclass

from ..analysis.stats import FAMILY_METHOD, RelativeChange
from .family import ALPHA
from .mechanisms import MECHANISMS, mechanism
from .model import CaseGroup, ProfileRow
from .phrases import format_adjusted, format_change, format_p
from .states import display_list, umbrella


GOALS = {
    ("throughput", "tcp"): "To increase TCP throughput",
    ("throughput", "udp"): "To increase UDP throughput",
    ("cpu", "tcp"): "To improve TCP CPU performance",
    ("cpu", "udp"): "To improve UDP CPU performance",
}
SIDE_PHRASE = {"tx": "at the transmitter", "rx": "at the receiver", "both": "on both sides"}


@dataclass(frozen=True)
class Step:
    """The difference between two profiles of a group: some features turned off."""

    group: CaseGroup
    on_row: ProfileRow
    off_row: ProfileRow
    requested: tuple[str, ...]
    """Features the later profile turned off at this step."""
    in_force: tuple[str, ...]
    """Of those, the ones whose state actually changed."""
    cascaded: tuple[str, ...]
    """Features the step did not ask for that changed with it."""
    not_applied: tuple[str, ...]
    """Requested but unchanged (fixed by the driver, or refused)."""
    already_off: tuple[str, ...] = ()
    """Requested, but already off in the earlier profile (a cascade of its own request)."""

    @property
    def credited(self) -> tuple[str, ...]:
        return self.in_force or self.cascaded

    @property
    def cumulative(self) -> bool:
        """A step from a profile that already had features off (a cumulative sequence's
        step), not from all on: its effect is measured with those others off."""
        return self.on_row is not self.group.baseline and bool(self.on_row.off_features)

    def label(self) -> str:
        """How the comparison was made: "vs all on", or the cumulative step it is."""
        if not self.cumulative:
            return f"{self.off_row.profile.name} vs {self.on_row.profile.name}"
        before = display_list(sorted(self.on_row.off_features | set(self.already_off)))
        return (f"cumulative step {self.on_row.profile.name} → {self.off_row.profile.name}, "
                f"with {before} already off")

    @property
    def where(self) -> str:
        return SIDE_PHRASE[self.group.side]

    @property
    def protocol(self) -> str:
        return self.group.traffic.protocol


@dataclass(frozen=True)
class Effect:
    """What one step did to one metric."""

    step: Step
    metric: str
    """"throughput" (higher is better) or "cpu" (CPU % per Gbps, lower is better)."""
    keep_on: RelativeChange
    """metric with the features on, relative to off."""
    turn_off: RelativeChange
    """metric with the features off, relative to on."""
    adjusted_p: float | None = None
    """Welch's p adjusted over every test of the report (stats.FAMILY_METHOD)."""
    tests: int = 1
    """How many tests that family held."""
    nested: tuple["Effect", ...] = ()
    """Effects of profiles nested with this one (findings.py): one finding with it."""

    @property
    def significant(self) -> bool:
        """Significant on its own (Welch p < 0.05, CI excluding 0), before correction."""
        return self.keep_on.significant and self.turn_off.significant

    @property
    def holds(self) -> bool:
        """Significant on its own and still so after the correction over all the
        report's tests: the only effects advice is drawn from."""
        return self.significant and self.adjusted_p is not None and self.adjusted_p < ALPHA

    @property
    def better_on(self) -> bool:
        gain = self.keep_on.ratio
        return gain > 0 if self.metric == "throughput" else gain < 0

    @property
    def goal(self) -> str:
        return GOALS[(self.metric, self.step.protocol)]

    @property
    def features(self) -> tuple[str, ...]:
        """The features the finding is about: the step's, and those of nested profiles."""
        if not self.nested:
            return self.step.credited
        names = [umbrella(f) for f in self.step.credited]
        for other in self.nested:
            names += [umbrella(f) for f in other.step.in_force if umbrella(f) not in names]
        return tuple(dict.fromkeys(names))

    @property
    def n(self) -> str:
        a, b = self.keep_on.welch.n_a, self.keep_on.welch.n_b
        return f"n={a}" if a == b else f"n={a}/{b}"

    def figures(self) -> str:
        """"+56% [CI +52%, +60%] (p<0.001; Holm p<0.001 over 22 tests; n=5)"."""
        unit = "" if self.metric == "throughput" else f" {self.step.group.cpu_metric}"
        return (f"{format_change(self.keep_on)}{unit} ({format_p(self.keep_on.welch.p_value)}; "
                f"{format_adjusted(self.adjusted_p, self.tests, FAMILY_METHOD)}; {self.n})")

    def sentence(self) -> str:
        step = self.step
        features = display_list(self.features)
        action = f"keep {features} on" if self.better_on else f"turn {features} off"
        if self.nested:
            parts = "; ".join(f"{_what_went_off(e.step)}: {e.figures()}" for e in (self, *self.nested))
            text = (f"{action} {step.where} — one finding, {_nesting(self)}: having them on: "
                    f"{parts} · {step.group.context}")
        else:
            text = (f"{action} {step.where} — {'' if self.better_on else 'having it on: '}"
                    f"{self.figures()} · {step.group.context}")
        if step.cumulative:
            text += f" ({step.label()})"
        pace = paced_at(step.on_row)
        if pace is not None:
            text += (f" (service demand: both paced at {pace:.3g} Gbit/s, "
                     f"{100 * step.group.traffic.service_demand:g}% of the slowest profile's throughput)")
        why = mechanism(self.features)
        if why and against_mechanism(self):
            # Only on real hosts (a local run sets such steps apart, validity.py).
            return (text + _cascade_note(step, self) + f"; against the mechanism ({why}): look "
                    "for a cause outside the CPU, such as a middlebox or virtual NIC that "
                    "mishandles offloaded packets, before acting on it")
        return text + _cascade_note(step, self) + (f"; why: {why}" if why else "")


def _what_went_off(step: Step) -> str:
    """"Tx checksumming off (txcsum-off, TSO with it)"."""
    with_it = f", {display_list(_cascade_names(step))} with it" if step.cascaded and step.in_force else ""
    return f"{display_list(step.credited)} off ({step.off_row.profile.name}{with_it})"


def _nesting(effect: Effect) -> str:
    """"turning Tx checksumming off also turned TSO off"."""
    outer = effect.nested[-1].step
    also = sorted(turned_off(outer) - {umbrella(f) for f in outer.in_force})
    return (f"turning {display_list(outer.in_force or outer.credited)} off also turned "
            f"{display_list(also)} off")


def against_mechanism(effect: "Effect") -> bool:
    """A significant effect of turning off features that save CPU work (all of whose
    mechanisms are known) in the direction that work cannot explain: more throughput,
    or less CPU per Gbps, with them off."""
    credited = effect.step.credited
    return (bool(credited) and all(f in MECHANISMS for f in credited)
            and effect.significant and not effect.better_on)


def turned_off(step: "Step") -> frozenset[str]:
    """Every feature the step's recorded state shows turned off, asked for or cascaded,
    named by its ethtool umbrella: tx checksumming off on veth turns off
    tx-tcp-segmentation while the recorded "tcp-segmentation-offload" line can stay on,
    and that is TSO going off all the same."""
    return frozenset(umbrella(name) for name in (*step.in_force, *step.cascaded))


def paced_at(row: ProfileRow) -> float | None:
    """The offered rate of a paced row, Gbit/s (the mean over its samples)."""
    offered = [s.counters["offered_bps"] for s in row.samples if "offered_bps" in s.counters]
    if not row.case.traffic.service_demand or not offered:
        return None
    return sum(offered) / len(offered) / 1e9


def _cascade_note(step: Step, effect: Effect | None = None) -> str:
    if not step.cascaded or not step.in_force or (effect is not None and effect.nested):
        return ""
    also = _cascade_names(step)
    if not also:
        return ""
    return (
        f" (turning {display_list(step.in_force)} off also turned "
        f"{display_list(also)} off here; the effect is of {'both' if len(also) == 1 else 'them all'})"
    )


def _cascade_names(step: Step) -> list[str]:
    """What went off with the step's request, by ethtool umbrella ("tx-tcp-segmentation"
    is TSO), without the request's own features."""
    asked = {umbrella(f) for f in step.in_force}
    return list(dict.fromkeys(umbrella(f) for f in step.cascaded if umbrella(f) not in asked))
