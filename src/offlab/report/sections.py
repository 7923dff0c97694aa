"""Pieces of text both renderers show: run facts, headlines, grouped warnings."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Mapping

from ..records import RunSettings
from ..warnings import LabWarning
from .document import ReportModel
from .model import ProfileRow
from .family import group_headline
from .states import display_list
from .topologies import describe
from .validity import IMPRECISE, NOT_AN_EFFECT
from .cells import Table

WARNING_TITLES = {
    "HighVariation": "High variation",
    "Outliers": "Outlier repetitions",
    "CpuSaturated": "CPU saturated",
    "CpuWindowOff": "CPU windows that do not match the measured window",
    "CpuRefused": "CPU refused: tasks over their core",
    "OffloadNotAsRequested": "Offload state differs from the request",
    "CascadedFeature": "Features changed as a side effect",
    "UdpLossHigh": "UDP loss (overloaded cases)",
    "Stall": "Stalls in the time series",
    "IncompleteCase": "Missing repetitions",
}


ADVICE_RULE = (
    "Advice comes only from effects that hold across all {tests} of this report: Welch "
    "p < 0.05 with the 95% CI of the relative change excluding 0, and the p-value adjusted "
    "over every test (Holm's method: the chance that any advised effect is noise stays "
    "under 5%) below 0.05; both p-values are given. Each effect is that of having the "
    "offloads on, with its 95% CI in brackets (a bare “±” in this report is a standard "
    "deviation over runs; a CI is written as its two ends, or its header says “CI”); each "
    "step is credited to the features its recorded state turned off, and profiles nested in "
    "force are one finding.")
SET_APART = (("Differences that are not offload effects (not advised)", NOT_AN_EFFECT),
             ("Measured less precisely than the run asked (shown, not advised)", IMPRECISE))


def advice_rule(model: ReportModel) -> str:
    """How advice is chosen, with the size of the family the correction ran over."""
    tests = model.recommendations.tested
    return ADVICE_RULE.format(tests=f"{tests} tests" if tests != 1 else "1 test")


def timestamp(unix: float | None) -> str:
    if unix is None:
        return "–"
    return dt.datetime.fromtimestamp(unix, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def run_facts(model: ReportModel) -> Table:
    info = model.info
    tools = "; ".join(f"{k}: {v}" for k, v in sorted(info.tool_versions.items())) or "–"
    rows = [
        ("Run", info.run_id),
        ("Plan", info.plan),
        ("Status", model.status),
        ("Started", timestamp(info.started_at)),
        ("Finished", timestamp(model.finished_at)),
        ("Host", info.host or "–"),
        ("Kernel", info.kernel),
        ("CPU", f"{info.cpu_model} ({info.cores} cores)"),
        ("Tools", tools),
        ("Command", info.command_line),
        ("Cases / samples", f"{model.cases} / {model.samples}"),
    ]
    if info.settings is not None:
        rows.append(("Settings", settings_sentence(info.settings, info.host_facts)))
    if info.notes:
        rows.append(("Notes", info.notes))
    return Table(("", ""), tuple(rows), align_left=2)


def settings_sentence(settings: RunSettings, host_facts: Mapping[str, Mapping[str, str]] | None = None) -> str:
    """"3 runs per case; receive softirq steered to the receiver's core" (or the
    adaptive rule). On real hosts the steering is what each host's facts say was
    applied there, never what the plan asked for."""
    if settings.ci_target is not None:
        runs = (f"repeated until the 95% CI is within ±{100 * settings.ci_target:g}% of the mean "
                f"({settings.min_runs}–{settings.max_runs} runs)")
    else:
        runs = f"{settings.repetitions} runs per case"
    applied = {role: facts["receive steering"] for role, facts in (host_facts or {}).items()
               if "receive steering" in facts}
    if applied:
        steering = "receive steering applied: " + "; ".join(f"{role}: {what}" for role, what in applied.items())
    elif settings.steer_rx_softirq:
        steering = "receive softirq steered to the receiving host's core"
    else:
        steering = "receive softirq where the kernel puts it"
    return f"{runs}; {steering}; hosts: {settings.hosts}"


def what_was_measured(model: ReportModel) -> list[str]:
    """The topology in words (report/topologies.py)."""
    cases = [row.case for group in model.groups for row in group.rows]
    return describe(cases, model.info.settings, model.info.kernel, model.info.cores, model.info.host_facts)


def no_advice_sentence(model: ReportModel) -> str | None:
    """Why the recommendations list is empty, or None when it is not."""
    rec = model.recommendations
    if rec.goals:
        return None
    if not rec.steps and not rec.excluded:
        return ("Nothing was compared: no group has two profiles of which one turns off a "
                "subset of the other's offloads (a plan needs an all-on baseline, e.g. "
                "sequences = [\"tx\", \"rx\"], for its profiles to be compared).")
    excluded = {id(step) for step, _ in rec.excluded}
    set_apart = sum(1 for e in rec.every_effect if e.holds and id(e.step) in excluded)
    plural = set_apart != 1
    held = (f"{set_apart} {'effects' if plural else 'effect'} held across them but "
            f"{'their cases were' if plural else 'its case was'} set apart (below, each with why)"
            if set_apart else "")
    alone = (f"{len(rec.uncorrected_only)} passed p < 0.05 alone, about what chance gives "
             f"(under “{UNCORRECTED}”, with their adjusted p)") if rec.uncorrected_only else ""
    if held or alone:
        return (f"No offload effect is advised from this report's {rec.tested} tests: "
                f"{'; '.join(part for part in (held, alone) if part)}.")
    return "No offload had a significant effect in this run."


def excluded_sentences(model: ReportModel, kind: str = NOT_AN_EFFECT) -> list[str]:
    """Differences shown in the tables but kept out of the advice, with why: those that
    are no offload effect (`kind` NOT_AN_EFFECT), or measured less precisely than the
    run asked (IMPRECISE)."""
    out = []
    for step, reason in model.recommendations.excluded:
        if reason.kind != kind:
            continue
        features = display_list(step.credited or step.requested)
        out.append(f"{step.group.context}: {features} {step.where} ({step.label()}) — {reason}")
    return out


def imprecise_keys(model: ReportModel) -> frozenset[str]:
    """Cases whose adaptive repetitions stopped before their precision target."""
    return frozenset(key for key, outcome in model.adaptive.items() if not outcome.reached)


UNCORRECTED = "Significant alone, not across the report's tests (not advised)"


def uncorrected_sentences(model: ReportModel) -> list[str]:
    """Effects with p < 0.05 on their own that the correction over all the report's tests
    does not keep: shown with both p-values, never advised."""
    return [f"{display_list(e.features)} {e.step.where} · {e.step.group.context} "
            f"({e.step.label()}): having it on: {e.figures()}"
            for e in model.recommendations.uncorrected_only]


def headlines(model: ReportModel) -> list[str]:
    """The seed's summary line per group; a group with a step set apart from the advice
    says so, since its all-on-vs-all-off difference contains that step's."""
    set_apart: dict[str, str] = {}
    for step, reason in model.recommendations.excluded:
        heading = dict((kind, title.removesuffix(" (not advised)").removesuffix(" (shown, not advised)"))
                       for title, kind in SET_APART)[reason.kind]
        set_apart.setdefault(step.group.title, f"{reason.label}; see “{heading}”")
    by_group: dict[int, list] = {}
    for headline in model.recommendations.headlines:
        by_group.setdefault(id(headline.group), []).append(headline)
    out = []
    for group in model.groups:
        line = group_headline(by_group.get(id(group), []))
        if line is None:
            continue
        why = set_apart.get(group.title)
        if why:
            line += f" — this includes a difference set apart from the advice ({why})"
        out.append(line)
    return out


@dataclass(frozen=True)
class WarningGroup:
    title: str
    advice: str | None
    """Shared advice when every item gives the same; None when it varies per item."""
    items: tuple[LabWarning, ...]


def grouped_warnings(warnings: tuple[LabWarning, ...]) -> list[WarningGroup]:
    kinds: dict[str, list[LabWarning]] = {}
    for warning in warnings:
        kinds.setdefault(type(warning).__name__, []).append(warning)
    groups = []
    for kind, items in kinds.items():
        advices = {w.advice for w in items}
        shared = advices.pop() if len(advices) == 1 else None
        groups.append(WarningGroup(WARNING_TITLES.get(kind, kind), shared, tuple(items)))
    return groups


def rows_by_scenario(model: ReportModel) -> dict[str, list[ProfileRow]]:
    """"scenario · MTU m" → every measured profile there once, in plan order (a shared
    baseline appears in several groups)."""
    seen: dict[str, ProfileRow] = {}
    for group in model.groups:
        for row in group.rows:
            seen.setdefault(row.case.key, row)
    out: dict[str, list[ProfileRow]] = {}
    for row in seen.values():
        out.setdefault(f"{row.case.scenario_label} · MTU {row.case.mtu}", []).append(row)
    return out
