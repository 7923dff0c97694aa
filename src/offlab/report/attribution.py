"""Attribution: every comparison the advice could be drawn from, one row each — which
features it credits, how it was made (a feature off alone vs all on, or a cumulative
step with others already off), its effects with one sign (having the features on), and
what became of it (advised, a step superseded by single-off profiles, set apart, or no
measurable effect)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .phrases import format_change, format_p
from .effects import Step
from .recommend import Recommendations
from .states import display_list
from .cells import Table
from .section import Section

if TYPE_CHECKING:
    from .document import ReportModel

INTRO = ("Each feature's effect comes from a profile with that feature alone off, compared "
         "with all on, where the plan has one; a cumulative step (a feature turned off with "
         "others already off) is labelled as a step and, when single-off profiles cover its "
         "features, is not advised. Effects are those of having the features on (all on "
         "relative to off for a single-off row), with the 95% CI in brackets and the p-value "
         "adjusted over all the report's tests (Holm); * = holds after that correction.")


def _cell(rec: "Recommendations", step: Step, metric: str) -> str:
    if metric == "throughput" and step.group.traffic.service_demand:
        return "paced"
    found = next((e for e in rec.effects_of(step) if e.metric == metric), None)
    if found is None:
        return "–"
    return (format_change(found.keep_on) + f" (Holm {format_p(found.adjusted_p)})"
            + (" *" if found.holds else ""))


def attribution_sections(model: "ReportModel") -> list:
    rec = model.recommendations
    advised = {id(f.step) for _, effects in rec.goals for e in effects for f in (e, *e.nested)}
    excluded = {id(step): reason.label for step, reason in rec.excluded}
    body = []
    for step in [*rec.steps, *(s for s, _ in rec.excluded), *rec.superseded]:
        if not step.credited:
            continue
        if id(step) in excluded:
            fate = f"set apart: {excluded[id(step)]}"
        elif step in rec.superseded:
            fate = "step, not advised (single-off profiles measure these features)"
        else:
            fate = "advised" if id(step) in advised else "no effect that holds"
        body.append((step.group.context, step.where.removeprefix("at the ").removeprefix("on "),
                     display_list(step.credited), step.label(), _cell(rec, step, "throughput"),
                     _cell(rec, step, "cpu"), fate))
    if not body:
        return []
    table = Table(("Case", "Side", "Credited", "Comparison", "Throughput, on vs off",
                   "CPU per Gbps, on vs off", "Used as"), tuple(body), align_left=4)
    return [Section("Attribution of effects", INTRO, (("Every comparison", table),))]
