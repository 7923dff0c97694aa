"""Pieces of text both renderers show: run facts, headlines, grouped warnings."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Mapping

from ..records import RunSettings
from ..warnings import LabWarning
from .document import ReportModel
from .model import ProfileRow
from .recommend import group_headline
from .states import display_list
from .topologies import describe
from .tables import Table

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
    return "No offload had a significant effect in this run."


def excluded_sentences(model: ReportModel) -> list[str]:
    """Differences shown in the tables but kept out of the advice, with why."""
    out = []
    for step, reason in model.recommendations.excluded:
        features = display_list(step.credited or step.requested)
        out.append(f"{step.group.context}: {features} {step.where} ({step.label()}) — {reason}")
    return out


def headlines(model: ReportModel) -> list[str]:
    """The seed's summary line per group; a group with a step set apart from the advice
    says so, since its all-on-vs-all-off difference contains that step's."""
    set_apart: dict[str, str] = {}
    for step, reason in model.recommendations.excluded:
        set_apart.setdefault(step.group.title, reason.label)
    out = []
    for group in model.groups:
        line = group_headline(group)
        if line is None:
            continue
        why = set_apart.get(group.title)
        if why:
            line += (f" — this includes a difference that is not an offload effect ({why}; "
                     "see “Differences that are not offload effects”)")
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
