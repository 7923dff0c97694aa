"""The whole report as one value: run, groups, warnings, recommendations."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from ..analysis.adaptive import AdaptiveOutcome
from ..hosts.facts import virtual_roles
from ..records import RunInfo
from ..store.store import RunResults
from ..warnings import LabWarning
from .checks import find_warnings
from .model import CaseGroup, Thresholds, build_groups, build_rows
from .recommend import Recommendations, recommend


@dataclass(frozen=True)
class ReportModel:
    info: RunInfo
    status: str
    finished_at: float | None
    groups: tuple[CaseGroup, ...]
    warnings: tuple[LabWarning, ...]
    recommendations: Recommendations
    thresholds: Thresholds
    samples: int
    cases: int
    adaptive: Mapping[str, AdaptiveOutcome] = field(default_factory=dict)
    """case key → how its adaptive repetitions ended (`run --ci-target`)."""
    stack: Mapping[str, Mapping[str, Mapping[str, str]]] = field(default_factory=dict)
    """place → host → network stack setting → value, as the run recorded it."""
    virtual_devices: bool = True
    """The run's hosts were joined by the lab's virtual devices (validity.py)."""


def _virtual_devices(results: RunResults) -> bool:
    """The path had virtual devices: hosts were namespaces on one machine (every run
    before real hosts existed), or a host's test interface is a software device."""
    settings = results.info.settings
    local = settings is None or settings.hosts == "local"
    return local or bool(virtual_roles(dict(results.info.host_facts)))


def build_report_model(
    results: RunResults, thresholds: Thresholds = Thresholds()
) -> ReportModel:
    """Compute everything a report shows from a stored run. Pure."""
    rows = build_rows(results)
    groups = build_groups(results, rows)
    virtual = _virtual_devices(results)
    return ReportModel(
        info=results.info,
        status=results.status,
        finished_at=results.finished_at,
        groups=groups,
        warnings=find_warnings(results, rows, groups, thresholds),
        recommendations=recommend(groups, virtual_devices=virtual, adaptive=results.adaptive),
        thresholds=thresholds,
        samples=sum(len(s) for s in results.samples.values()),
        cases=len(results.cases),
        adaptive=results.adaptive,
        stack=results.stack,
        virtual_devices=virtual,
    )
