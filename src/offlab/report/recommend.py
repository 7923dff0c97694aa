"""Recommendations derived from the data, in the seed report's form.

Every profile is compared with its *predecessor*: the profile of the same group whose
set of features turned off is the largest strict subset of its own (ties go to the one
with most features off in force, then to the nearest earlier profile in plan order). In
a cumulative sequence (all on → TSO off → + tx-csum off → + GSO off) that is the
previous step; for a profile with one feature off it is "all on". Where a group has a
single-off profile for a feature, that feature's effect is its single-off vs all on,
and a cumulative step crediting only such features is listed as a step, not advised
(`Recommendations.superseded`); a cumulative step that is a feature's only measurement
is advised with its label ("cumulative step …, with X already off"). Every effect is
given with one sign: that of having the offload on. The features credited are those whose state in
force changed: a request the kernel refused ([fixed]) is reported as not applied,
and a feature that changed with it (a cascade) is named in the sentence.

An effect is advised only when it holds across the report's tests: Welch p < 0.05 with
the 95 % CI of the relative change excluding 0, and its p adjusted over every test the
report makes (every step's effects, every group's headline: family.py, Holm) below 0.05.
The adjusted p is printed beside the raw one. The rest are listed as having no
measurable effect, with both. Profiles nested in force (tx checksumming off took TSO
with it) give one finding naming every feature (findings.py). Differences that are not
offload effects at all — an overloaded UDP case, a property of the lab's veth devices,
an effect against the offload's mechanism on one shared machine — and those of a case
that missed its precision target (precision.py) are set apart with the reason and
never advised (`set_apart`, which the seed claims' verdicts honour too).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Iterable, Mapping

from ..analysis.adaptive import AdaptiveOutcome
from ..analysis.stats import FAMILY_METHOD, RelativeChange, Summary, adjusted_p_values, relative_change
from .family import Headline, headline_tests
from .effects import GOALS, SIDE_PHRASE, Effect, Step
from .findings import merge_nested
from .model import CaseGroup, ProfileRow
from .phrases import format_adjusted, format_change, format_p
from .precision import imprecise
from .states import display_list, known_features, side_changes, side_ifaces
from .validity import Exclusion, contention, exclusion

@dataclass(frozen=True)
class NoEffect:
    """Features whose steps changed nothing measurable, for one side and protocol."""

    features: tuple[str, ...]
    side: str
    protocol: str
    effects: tuple[Effect, ...]

    @property
    def testable(self) -> bool:
        return all(e.keep_on.welch.p_value is not None for e in self.effects)

    def sentence(self) -> str:
        head = f"{display_list(self.features)} {SIDE_PHRASE[self.side]} ({self.protocol.upper()})"
        if not self.testable:
            return head + ": one run per profile, nothing can be tested — rerun with --runs 3 or more"
        shown = min(self.effects, key=lambda e: e.keep_on.welch.p_value or 1.0)
        parts = [
            f"{'throughput' if e.metric == 'throughput' else e.step.group.cpu_metric} "
            f"by {format_change(e.keep_on)} ({format_p(e.keep_on.welch.p_value)}; "
            f"{format_adjusted(e.adjusted_p, e.tests, FAMILY_METHOD)})"
            for e in self.effects
            if e.step is shown.step
        ]
        cases = len({e.step.group.slug for e in self.effects})
        more = f"; none holds in {cases} cases" if cases > 1 else ""
        return (
            f"{head}: having it on changed {' and '.join(parts)}, {shown.n} · "
            f"{shown.step.group.context}{more}"
        )


@dataclass(frozen=True)
class Contradiction:
    """One feature, one goal, significant in opposite directions in different cases."""

    features: tuple[str, ...]
    side: str
    goal: str
    keep: tuple[Effect, ...]
    drop: tuple[Effect, ...]

    def sentence(self) -> str:
        def where(effects: tuple[Effect, ...]) -> str:
            return "; ".join(e.step.group.context for e in effects)

        return (
            f"{self.goal}: {display_list(self.features)} {SIDE_PHRASE[self.side]} helps "
            f"in {where(self.keep)} but hurts in {where(self.drop)} — scenario-specific, or "
            "one of them is noise; rerun those cases with more runs"
        )


@dataclass(frozen=True)
class Recommendations:
    goals: tuple[tuple[str, tuple[Effect, ...]], ...]
    """Goal title → findings that hold after the correction, largest first (goals with
    none omitted); nested profiles' effects are folded into one (findings.py)."""
    no_effect: tuple[NoEffect, ...]
    not_applied: tuple[Step, ...]
    steps: tuple[Step, ...]
    effects: tuple[Effect, ...]
    contradictions: tuple[Contradiction, ...] = ()
    excluded: tuple[tuple[Step, Exclusion], ...] = ()
    """Steps set apart with why: no offload effect (overload, a virtual device…), or
    measured less precisely than asked (precision.py)."""
    superseded: tuple[Step, ...] = ()
    """Cumulative steps whose features each have a profile of their own off alone in the
    group: those single-off comparisons are the features' effects; these are steps."""
    every_effect: tuple[Effect, ...] = ()
    """The effects of every compared step (advisable, set apart and superseded), each
    with its adjusted p: what the forest plot and the attribution table show."""
    headlines: tuple[Headline, ...] = ()
    """Each group's all on vs most off, adjusted in the same family."""

    @property
    def tested(self) -> int:
        """Tests in the family the correction ran over (every effect, and every headline
        that is not a step's own comparison, with two or more runs on both sides)."""
        return max((t.tests for t in (*self.every_effect, *self.headlines) if t.adjusted_p is not None),
                   default=0)

    @property
    def uncorrected_only(self) -> tuple[Effect, ...]:
        """Effects of advisable steps significant alone but not after the correction."""
        return tuple(e for e in self.effects if e.significant and not e.holds)

    def effects_of(self, step: Step) -> tuple[Effect, ...]:
        return tuple(e for e in self.every_effect if e.step is step)


def recommend(groups: Iterable[CaseGroup], virtual_devices: bool = True,
              adaptive: Mapping[str, AdaptiveOutcome] | None = None) -> Recommendations:
    """`virtual_devices`: the run's hosts were joined by veth/VXLAN/TAP devices on one
    machine (a local run), whose own behaviour must not pass for an offload's.
    `adaptive`: case key → how its adaptive repetitions ended; a case that missed its
    precision target advises nothing."""
    # Groups whose profiles also change the userspace datapath (offlab-fwd's mode and
    # port offloads: the userspace study, R as offlab-fwd) are compared in their own
    # sections; "keep X on" is advice about ethtool offloads alone.
    every_group = list(groups)  # each has a headline
    groups = [g for g in every_group if not _varies_datapath(g)]
    paced = {_pace_key(g) for g in groups if g.traffic.service_demand}
    metrics = {id(g): advised_metrics(g, _pace_key(g) in paced) for g in groups}
    every_step = tuple(step for group in groups for step in group_steps(group))
    superseded = tuple(step for step in every_step if _superseded(step))
    all_steps = tuple(step for step in every_step if not _superseded(step))
    raw = {id(step): step_effects(step, metrics[id(step.group)]) if step.credited else []
           for step in every_step}
    effects_of, headlines = _adjusted(every_step, raw, [h for g in every_group for h in headline_tests(g)])
    reasons = {id(step): set_apart(step, raw[id(step)], virtual_devices, adaptive or {})
               for step in all_steps}
    steps = tuple(step for step in all_steps if reasons[id(step)] is None)
    effects = tuple(e for step in steps for e in effects_of[id(step)])
    by_goal: dict[str, list[Effect]] = {title: [] for title in GOALS.values()}
    for effect in effects:
        if effect.holds:
            by_goal[effect.goal].append(effect)
    goals = tuple(
        (title, tuple(sorted(merge_nested(found), key=lambda e: -abs(_shown(e).ratio))))
        for title, found in by_goal.items()
        if found
    )
    return Recommendations(
        goals=goals,
        no_effect=_no_effect(effects),
        not_applied=tuple(s for s in steps if s.not_applied),
        steps=steps,
        effects=effects,
        contradictions=_contradictions(effects),
        excluded=tuple((step, reasons[id(step)]) for step in all_steps if reasons[id(step)]),
        superseded=superseded,
        every_effect=tuple(e for step in every_step for e in effects_of[id(step)]),
        headlines=headlines,
    )


def set_apart(step: Step, effects: list[Effect], virtual_devices: bool,
              adaptive: Mapping[str, AdaptiveOutcome]) -> Exclusion | None:
    """Why a step's difference may not become advice or a claim's verdict, whatever the
    reason: no offload effect (validity.exclusion), against the mechanism on one machine
    (validity.contention), or less precise than the run asked (precision.py)."""
    return (exclusion(step, virtual_devices)
            or (contention(step, effects) if virtual_devices else None)
            or imprecise(step, adaptive))


def _adjusted(steps: tuple[Step, ...], raw: Mapping[int, list[Effect]],
              headlines: list[Headline]) -> tuple[dict[int, list[Effect]], tuple[Headline, ...]]:
    """Every effect and headline with its p adjusted over all of them at once: one
    family, the report's (stats.adjusted_p_values). A headline that is a step's own
    comparison (all on vs a profile whose predecessor is all on) is that test, not a
    second one: it takes the effect's adjusted p."""
    effects = [e for step in steps for e in raw[id(step)]]
    same = {(id(e.step.on_row), id(e.step.off_row), e.metric): e for e in effects}
    own = [h for h in headlines if (id(h.group.baseline), id(h.group.widest), h.metric) not in same]
    tested = [e.keep_on.welch.p_value for e in effects] + [h.change.welch.p_value for h in own]
    present = [p for p in tested if p is not None]
    adjusted = iter(adjusted_p_values(present))
    family = [next(adjusted) if p is not None else None for p in tested]
    p_of = {id(t): p for t, p in zip([*effects, *own], family)}
    out = {id(step): [dataclasses.replace(e, adjusted_p=p_of[id(e)], tests=len(present))
                      for e in raw[id(step)]] for step in steps}

    def p_of_headline(h: Headline) -> float | None:
        twin = same.get((id(h.group.baseline), id(h.group.widest), h.metric))
        return p_of[id(twin)] if twin is not None else p_of[id(h)]

    marked = tuple(dataclasses.replace(h, adjusted_p=p_of_headline(h), tests=len(present))
                   for h in headlines)
    return out, marked


def _superseded(step: Step) -> bool:
    """A cumulative step whose credited features each have a single-off profile (that
    feature alone off) in the group: attribution comes from those, vs all on."""
    if not step.cumulative or not step.credited:
        return False
    singles = {next(iter(r.off_features)) for r in step.group.rows if len(r.off_features) == 1}
    return set(step.in_force or step.requested) <= singles


def _contradictions(effects: tuple[Effect, ...]) -> tuple[Contradiction, ...]:
    found: dict[tuple[tuple[str, ...], str, str], tuple[list[Effect], list[Effect]]] = {}
    for effect in effects:
        if effect.holds:
            key = (effect.step.credited, effect.step.group.side, effect.goal)
            keep, drop = found.setdefault(key, ([], []))
            (keep if effect.better_on else drop).append(effect)
    return tuple(
        Contradiction(features, side, goal, tuple(keep), tuple(drop))
        for (features, side, goal), (keep, drop) in found.items()
        if keep and drop
    )


def digest(effects: Iterable[Effect]) -> str:
    """The seed's one-line form of a goal: "keep TSO on at the transmitter (2 cases);
    keep GRO on at the receiver" — each distinct action once, in the list's order."""
    counts: dict[str, int] = {}
    for effect in effects:
        features = display_list(effect.features)
        verb = f"keep {features} on" if effect.better_on else f"turn {features} off"
        action = f"{verb} {effect.step.where}"
        counts[action] = counts.get(action, 0) + 1
    parts = [a + (f" ({n} cases)" if n > 1 else "") for a, n in counts.items()]
    text = "; ".join(parts)
    return text[:1].upper() + text[1:]


def group_steps(group: CaseGroup) -> list[Step]:
    steps = []
    for index, row in enumerate(group.rows):
        before = _predecessor(group.rows, index, group.side)
        if before is not None:
            steps.append(_step(group, before, row))
    return steps


def _predecessor(rows: tuple[ProfileRow, ...], index: int, side: str) -> ProfileRow | None:
    """The largest strict subset of the row's request; among equals the one whose state
    in force is nearest (most features off, cascades counted), then the nearest earlier."""
    off = rows[index].off_features
    candidates = [(i, r) for i, r in enumerate(rows) if r.off_features < off]
    if not candidates:
        return None
    widest = max(len(r.off_features) for _, r in candidates)
    best = [(i, r) for i, r in candidates if len(r.off_features) == widest]
    most = max(_off_in_force(r, side) for _, r in best)
    best = [(i, r) for i, r in best if _off_in_force(r, side) == most]
    earlier = [(i, r) for i, r in best if i < index]
    return (earlier[-1] if earlier else best[0])[1]


def _off_in_force(row: ProfileRow, side: str) -> int:
    """How many features are off in the row's recorded state on the side."""
    return len({name for iface in side_ifaces(row.offload_state, side)
                for name, state in row.offload_state[iface].items() if not state.on})


def _step(group: CaseGroup, on_row: ProfileRow, off_row: ProfileRow) -> Step:
    requested = tuple(
        name for name, on in off_row.profile.features.items()
        if not on and name not in on_row.off_features
    )
    after = off_row.offload_state
    known = known_features(after, group.side)
    if not known:  # no read-back recorded: take the request at its word
        return Step(group, on_row, off_row, requested, requested, (), ())
    changed = side_changes(on_row.offload_state, after, group.side)
    before_off = {name for iface in side_ifaces(on_row.offload_state, group.side)
                  for name, state in on_row.offload_state[iface].items() if not state.on}
    in_force = tuple(f for f in requested if f in changed or f not in known)
    already = tuple(f for f in requested if f in known and f not in changed and f in before_off)
    not_applied = tuple(f for f in requested if f in known and f not in changed and f not in before_off)
    cascaded = tuple(sorted(changed - set(requested)))
    return Step(group, on_row, off_row, requested, in_force, cascaded, not_applied, already)


def _pace_key(group: CaseGroup) -> tuple:
    return (group.scenario, group.mtu, group.side, group.traffic.protocol, group.traffic.message_size,
            group.traffic.streams, group.traffic.bidirectional)


def advised_metrics(group: CaseGroup, has_paced_twin: bool) -> tuple[str, ...]:
    """Which metrics of a group may become advice: a paced group's throughput is its
    pace, so only its CPU per Gbit/s (the service demand) counts; a saturated group
    whose workload was also paced leaves CPU advice to the paced one (at saturation
    the throughput effect and the CPU effect are one measurement)."""
    if group.traffic.service_demand:
        return ("cpu",)
    return ("throughput",) if has_paced_twin else ("throughput", "cpu")


def step_effects(step: Step, metrics: tuple[str, ...] = ("throughput", "cpu")) -> list[Effect]:
    pairs: list[tuple[str, Summary | None, Summary | None]] = [
        ("throughput", step.on_row.throughput, step.off_row.throughput),
        ("cpu", step.on_row.cpu_per_gbps, step.off_row.cpu_per_gbps),
    ]
    effects = []
    for metric, on, off in pairs:
        if on is None or off is None or metric not in metrics:
            continue
        keep_on = relative_change(on.values, off.values)
        turn_off = relative_change(off.values, on.values)
        if keep_on is not None and turn_off is not None:
            effects.append(Effect(step, metric, keep_on, turn_off))
    return effects


def _no_effect(effects: tuple[Effect, ...]) -> tuple[NoEffect, ...]:
    by_key: dict[tuple[tuple[str, ...], str, str], list[Effect]] = {}
    for effect in effects:
        step = effect.step
        by_key.setdefault((step.credited, step.group.side, step.protocol), []).append(effect)
    return tuple(
        NoEffect(features, side, protocol, tuple(found))
        for (features, side, protocol), found in by_key.items()
        if not any(e.holds for e in found)
    )


def _shown(effect: Effect) -> RelativeChange:
    return effect.keep_on if effect.better_on else effect.turn_off


def not_applied_sentence(step: Step) -> str:
    return (
        f"{display_list(step.not_applied)} {step.where} ({step.off_row.profile.name}, "
        f"{step.group.context}) stayed as it was — fixed by the driver or refused; "
        "no effect can be attributed to it"
    )


def _varies_datapath(group: CaseGroup) -> bool:
    return len({row.case.datapath for row in group.rows}) > 1
